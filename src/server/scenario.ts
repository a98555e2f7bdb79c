import { definedOnly } from "../util/options.js";
import type { QuotaConfig } from "./limits.js";
import type { RateLimitConfig } from "./rate-schedule.js";

/**
 * A scripted fault.
 * - `proxy_503`: a proxy in front answers 503 with an HTML page; the service never saw it (not billed).
 * - `internal_error`: 500, raised before auth and before the input is judged (not billed).
 * - `render_failed`: 422 after the engine ran (billed).
 * - `proxy_502`: the render ran, then the proxy answers 502 with an HTML page (billed).
 * - `reset`: the render ran, then the connection is reset with no response (billed).
 * - `drop`: the connection is reset as the request arrives, before anything is judged (not billed).
 * - `drip`: the render ran and its PDF is written slowly, in 8 pieces over `dripMs` (billed).
 * - `rate_limited`: 429 `rate_limited`, judged where the rate limiter stands (after auth and account
 *   standing, before the body), so it looks like a real rate-limit answer, `X-Renders-Remaining` and
 *   all; it takes no token from the key's bucket and is unrelated to the send rate (not billed).
 */
export type FaultKind =
  | "proxy_503"
  | "internal_error"
  | "render_failed"
  | "proxy_502"
  | "reset"
  | "drop"
  | "drip"
  | "rate_limited";

/** `Retry-After` of a `rate_limited` fault whose window sets no `retryAfterMs`, in milliseconds. */
export const rateLimitedFaultRetryAfterMs = 1000;

/** A fault that hits requests arriving inside a time window. */
export interface FaultWindow {
  readonly fault: FaultKind;
  /**
   * Window start, in milliseconds after server start, inclusive.
   *
   * @default 0
   */
  readonly fromMs?: number;
  /**
   * Window end, in milliseconds after server start, exclusive.
   *
   * @default never ends
   */
  readonly toMs?: number;
  /**
   * Chance, 0..1, that a request in the window gets the fault (seeded draw).
   *
   * @default 1
   */
  readonly probability?: number;
  /**
   * `Retry-After` to send with `internal_error`, `proxy_503` or `rate_limited`, in milliseconds.
   *
   * @default none; 1000 for `rate_limited`
   */
  readonly retryAfterMs?: number;
  /**
   * Time over which a `drip` fault writes the PDF, in milliseconds.
   *
   * @default 1000
   */
  readonly dripMs?: number;
  /**
   * Hit only a request whose body (by sha256) the server has not received before, whatever the
   * earlier answer: so "every job's first send gets 429, its resend renders" can be scripted. A body
   * first sent before the window opened is a resend inside it.
   *
   * @default false
   */
  readonly firstSendOnly?: boolean;
}

/** What an API key is and which limits apply to it. */
export interface KeyAttributes {
  /**
   * `revoked` and `closed` get 401 `invalid_api_key`; `arrears` gets 402.
   *
   * @default "active"
   */
  readonly state?: "active" | "revoked" | "closed" | "arrears";
  /**
   * Revokes the key this long after server start, in milliseconds: from then on it gets 401
   * `invalid_api_key`, as a key revoked in the dashboard in the middle of a batch (spec,
   * "Authentication" 5). Requests that arrived earlier finish as they would have.
   *
   * @default never
   */
  readonly revokeAtMs?: number;
  /**
   * A demo key: its concurrent renders are capped by `Scenario.demo`.
   *
   * @default false
   */
  readonly demo?: boolean;
  /**
   * This key's rate limit; `null` for none.
   *
   * @default the scenario's
   */
  readonly rateLimit?: RateLimitConfig | null;
  /**
   * This key's quota; `null` for none.
   *
   * @default the scenario's
   */
  readonly quota?: QuotaConfig | null;
}

/** How `Retry-After` values are written. */
export interface RetryAfterStyle {
  /**
   * `seconds` (delay-seconds) or `http-date` (RFC 9110 IMF-fixdate).
   *
   * @default "seconds"
   */
  readonly format?: "seconds" | "http-date";
  /**
   * `ceil`: whole seconds, rounded up. `exact`: decimal seconds to the ms (seconds format only).
   *
   * @default "ceil"
   */
  readonly rounding?: "ceil" | "exact";
}

/** A fault scenario: plain JSON-able data. Every field is optional. */
export interface Scenario {
  /** One line saying what the scenario is for. */
  readonly description?: string;
  /**
   * Token bucket per key; `null` for none.
   *
   * @default null
   */
  readonly rateLimit?: RateLimitConfig | null;
  /**
   * Quota per key; `null` for none (then no `X-Renders-Remaining`).
   *
   * @default null
   */
  readonly quota?: QuotaConfig | null;
  /**
   * Demo keys' cap on concurrent renders, and the `Retry-After` (ms) of `demo_busy`.
   *
   * @default { maxConcurrent: 1, retryAfterMs: 1000 }
   */
  readonly demo?: { readonly maxConcurrent?: number; readonly retryAfterMs?: number };
  /** Attributes merged onto keys by id (`main`, `demo`, `revoked`, `closed`, `arrears`, or new ids). */
  readonly keys?: Readonly<Record<string, KeyAttributes>>;
  /**
   * Time the engine takes per render, in milliseconds.
   *
   * @default 0
   */
  readonly renderDelayMs?: number;
  /**
   * Extra uniform random render time, 0..this, in milliseconds.
   *
   * @default 0
   */
  readonly renderJitterMs?: number;
  /**
   * Longest render before `408 render_timeout`, in milliseconds.
   *
   * @default 30000
   */
  readonly renderTimeoutMs?: number;
  /**
   * Largest accepted request body, in bytes; larger gets 400.
   *
   * @default 1048576
   */
  readonly maxBodyBytes?: number;
  /**
   * Scripted faults; times are relative to server start.
   *
   * @default []
   */
  readonly faults?: readonly FaultWindow[];
  /** Format and rounding of every `Retry-After`. */
  readonly retryAfter?: RetryAfterStyle;
}

/** A scenario with every default applied. */
export interface ResolvedScenario {
  readonly description: string;
  readonly rateLimit: RateLimitConfig | null;
  readonly quota: QuotaConfig | null;
  readonly demo: { readonly maxConcurrent: number; readonly retryAfterMs: number };
  readonly keys: Readonly<Record<string, KeyAttributes>>;
  readonly renderDelayMs: number;
  readonly renderJitterMs: number;
  readonly renderTimeoutMs: number;
  readonly maxBodyBytes: number;
  readonly faults: readonly FaultWindow[];
  readonly retryAfter: Required<RetryAfterStyle>;
}

/** Defaults of every scenario field. */
export const scenarioDefaults: ResolvedScenario = Object.freeze<ResolvedScenario>({
  description: "",
  rateLimit: null,
  quota: null,
  demo: { maxConcurrent: 1, retryAfterMs: 1000 },
  keys: {},
  renderDelayMs: 0,
  renderJitterMs: 0,
  renderTimeoutMs: 30_000,
  maxBodyBytes: 1_048_576,
  faults: [],
  retryAfter: { format: "seconds", rounding: "ceil" },
});

/** A copy without the fields set to `undefined`, so spreading it never erases a default. */
const defined = <T extends object>(o: T | undefined): Partial<T> => definedOnly(o ?? ({} as T));

/** Applies the defaults once; an explicit `undefined` never erases one. */
export function resolveScenario(scenario: Scenario): ResolvedScenario {
  const d = scenarioDefaults;
  return Object.freeze({
    ...d,
    ...defined(scenario),
    demo: { ...d.demo, ...defined(scenario.demo) },
    keys: { ...scenario.keys },
    faults: [...(scenario.faults ?? [])],
    retryAfter: { ...d.retryAfter, ...defined(scenario.retryAfter) },
  });
}

/** Faults whose window holds `elapsed` (ms since server start), in listed order. */
export function activeFaults(scenario: ResolvedScenario, elapsed: number): FaultWindow[] {
  return scenario.faults.filter((w) => elapsed >= (w.fromMs ?? 0) && elapsed < (w.toMs ?? Infinity));
}
