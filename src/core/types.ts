/** One render: the spec's minimal request is `{ html }`; other fields pass through unchanged. */
export interface RenderRequest {
  /** Markup to render. */
  readonly html: string;
  readonly [field: string]: unknown;
}

/** Header values as Node delivers them: a repeated header may arrive as an array. */
export type HeaderValue = string | readonly string[] | undefined;

/** Response headers with lower-case names. */
export type ResponseHeaders = Readonly<Record<string, HeaderValue>>;

/** A rendered document. A success is always billed (the engine ran). */
export interface RenderResult {
  /** The success body as the service sent it, opaque bytes (the spec leaves it open). */
  readonly body: Uint8Array;
  /** The response's `Content-Type`, or `application/octet-stream` when it had none. */
  readonly contentType: string;
  readonly status: number;
  readonly headers: ResponseHeaders;
  readonly billed: true;
  /** Sends this job took, 1 when the first one succeeded. */
  readonly attempts: number;
  /** `X-Renders-Remaining` of this response, when it carried a valid one. */
  readonly remaining: number | undefined;
  /** When its `Retry-After` (if valid) says the next render may go, for instance the quota's reset. */
  readonly retryAt: Date | undefined;
}

/**
 * What every layer knows about the try in progress: a plain, frozen object. A layer that changes a
 * field hands on a copy (`{ ...ctx, attempt }`), and a policy of yours does the same: hand on `ctx`
 * or a spread of it, never one built field by field, or the layers inside lose `beforeSend` (the
 * breaker is no longer asked again when the job gets its slot) and `owner` (a batch left early
 * abandons the job's render on the wire). A `signal` of your own must follow `ctx.signal`.
 */
export interface AttemptContext {
  /** The job's signal (deadline, caller's cancel and client close); every wait and every send honours it. */
  readonly signal: AbortSignal;
  /** 1 for a job's first send. */
  readonly attempt: number;
  /**
   * The caller's name for the job (`render(request, { id })`, a batch job's `id`), carried into every
   * event and log line about the job; `undefined` when the caller gave none.
   */
  readonly jobId?: string | undefined;
  /**
   * When the job must be done, in milliseconds since the epoch; no wait is begun that would pass
   * it. The `signal` is what stops the job at that time: an earlier `deadline` set here alone only
   * keeps waits from starting.
   */
  readonly deadline?: number | undefined;
  /**
   * Called by the limiter once the job holds its send slot, just before it sends; throws (the job
   * unsent) when it may no longer go, as when the breaker opened while the job queued for a slot.
   */
  readonly beforeSend?: (() => void) | undefined;
  /** Whoever runs the job besides its caller (`renderMany`), told of its waits and sends; pass it on. */
  readonly owner?: JobOwner | undefined;
}

/**
 * What runs a job (a batch) hears of it: when it waits before a resend, so that another job may
 * take its place, and when a request of it is on the wire, so that a batch left early stops it
 * between sends and never abandons a render the service may be running. Each call returns the
 * function that ends what it began.
 */
export interface JobOwner {
  /** The job waits `ms` before it sends again (`Retry-After`, a backoff, the retry budget). */
  waiting(ms: number): () => void;
  /** A request of the job goes on the wire; the returned function is called once its answer is in. */
  sending(): () => void;
}

/** One try at the service: resolves with a rendered result, rejects with a RenderError. */
export type Send = (req: RenderRequest, ctx: AttemptContext) => Promise<RenderResult>;

/**
 * Wraps the next send. Shared state (breaker, bucket) lives in the factory, not in here. Call
 * `next` once a call: the layers outside count each call as one send (a policy inside the breaker
 * that sends twice makes the breaker miss a run of failures).
 */
export type Policy = (next: Send) => Send;

/**
 * Composes policies around the innermost send. `policies` are listed outside in, in the order a
 * request meets them, so the fold runs right to left (as undici's `compose`, read the other way).
 *
 * @throws TypeError when an entry is not a function, at build time rather than on the first send.
 */
export function compose(policies: readonly Policy[], innermost: Send): Send {
  return policies.reduceRight<Send>((next, policy, index) => {
    if (typeof policy !== "function") {
      throw new TypeError(`Expected policy ${index} to be a function (next) => send, got ${typeof policy}.`);
    }
    const send = policy(next);
    if (typeof send !== "function") {
      throw new TypeError(`Expected policy ${index} to return a send function, got ${typeof send}.`);
    }
    return send;
  }, innermost);
}
