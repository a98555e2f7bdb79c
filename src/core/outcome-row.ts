/** Whether a failed job cost a render: `"unknown"` when the request left and no answer came back. */
export type Billed = boolean | "unknown";

/**
 * When an outcome may be sent again (DESIGN §2).
 * - `never`: resending cannot help, or would bill again.
 * - `always`: free and transient; wait at least `Retry-After`, else back off.
 * - `limited`: as `always`, with fewer tries (a page may be slow by nature).
 * - `if_wait_fits`: only when `Retry-After` is within `maxRetryAfter`; otherwise fail with `retryAt`.
 * - `if_ambiguous_allowed`: the service may have rendered it; only with `retryAmbiguous: true`.
 */
export type RetryRule = "never" | "always" | "limited" | "if_wait_fits" | "if_ambiguous_allowed";

/**
 * What an outcome tells the limiter.
 * - `halt`: the key is unusable, or the setup wrong; later jobs fail fast, unsent.
 * - `slow_down`: lower the send rate; pause all sends if 429s persist.
 * - `quota_out`: remaining is 0 until `Retry-After`.
 * - `fewer_concurrent`: lower concurrency.
 */
export type LimiterEffect = "none" | "halt" | "slow_down" | "quota_out" | "fewer_concurrent";

/** A row of the outcome table: what a code means for billing, retries, the breaker and the limiter. */
export interface OutcomeRow {
  readonly billed: Billed;
  readonly retry: RetryRule;
  /** Counts as a failure for the circuit breaker. */
  readonly breakerFailure: boolean;
  readonly limiter: LimiterEffect;
}
