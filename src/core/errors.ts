import type { Billed, OutcomeRow } from "./outcome-row.js";
import type { SpecErrorCode } from "./spec.js";

export type { Billed } from "./outcome-row.js";

/**
 * Codes renderguard gives to outcomes the service did not name itself (DESIGN §2, §9).
 * - `network_error`: the request never left whole (refused, DNS, TLS, connect time-out). Free.
 * - `response_lost`: the whole request was written and no answer came (reset, time-out). Maybe billed.
 * - `upstream_unavailable`: a 503 without the service's error body (a proxy). Free.
 * - `upstream_error`: another 5xx without the service's error body (a gateway). Maybe billed.
 * - `unknown_error`: an error code or status the spec does not list. Free, never retried.
 * - `response_too_large`: a success body over the transport's size cap. Billed.
 * - `response_incomplete`: a success whose body was cut short (reset, time-out, abort). Billed.
 * - `unexpected_response`: a 2xx that is not what the client's `expect` says a document is (an HTML
 *   page where a PDF was expected), or one whose bytes `sdkTransport` could not find in what the
 *   SDK gave. Maybe billed, never resent, never taken as the document; the message gives its
 *   content type and first bytes, or the keys of the SDK's value.
 * - `invalid_request` with no status: an SDK refused to send the request (its own validation, an
 *   invalid URL). Free, never resent.
 * - `setup_failed`: before the service's first answer, connection refused, DNS, TLS, an SDK's
 *   refusal to send or 404 `not_found`; before its first document, an `unexpected_response`: the
 *   base URL (or the SDK's set-up) is wrong. It halts the client; the message names the cause and
 *   the URL, or the SDK call.
 * - `aborted`: the caller's signal, the job's deadline, or `client.close()` stopped the job.
 * - `circuit_open`, `quota_wait_too_long`, `paused_too_long`, `budget_exhausted`: policies declined
 *   to send (again); nothing more was sent or billed.
 */
export type LocalErrorCode =
  | "network_error"
  | "response_lost"
  | "upstream_unavailable"
  | "upstream_error"
  | "unknown_error"
  | "response_too_large"
  | "response_incomplete"
  | "unexpected_response"
  | "setup_failed"
  | "aborted"
  | "circuit_open"
  | "quota_wait_too_long"
  | "paused_too_long"
  | "budget_exhausted";

/** Every code a `RenderError` can have: the service's, and renderguard's own. */
export type RenderErrorCode = SpecErrorCode | LocalErrorCode;

/** What a `RenderError` is made from: its code, message, billing and what the service said. */
export interface RenderErrorFields {
  readonly code: RenderErrorCode;
  /** What happened, in words. For a service error, the service's `error.message`. */
  readonly message: string;
  /** The HTTP status, when a response arrived. */
  readonly status?: number | undefined;
  readonly billed: Billed;
  /** When the service expects a retry to succeed (from `Retry-After`), if it said. */
  readonly retryAt?: Date | undefined;
  /** The service's `error.docs_url`, when its body carried one. */
  readonly docsUrl?: string | undefined;
  /** Sends the job made; 0 when it failed before sending. */
  readonly attempts?: number | undefined;
  /** `X-Renders-Remaining` of the failed response, when it carried a valid one. */
  readonly remaining?: number | undefined;
  /**
   * The outcome table's row the failed send was judged by (resent or not, a breaker failure or not,
   * what it tells the limiter): its code's, or, for a code the service sent with a status it does
   * not go with, both readings at once (DESIGN §2). Undefined for a policy's refusal.
   */
  readonly row?: OutcomeRow | undefined;
}

/**
 * Every failure renderguard reports. Branch on `code`, never on the message. It never carries the
 * API key or any request header.
 */
export class RenderError extends Error {
  override readonly name = "RenderError";
  readonly code: RenderErrorCode;
  readonly status: number | undefined;
  readonly billed: Billed;
  readonly retryAt: Date | undefined;
  readonly docsUrl: string | undefined;
  readonly attempts: number;
  readonly remaining: number | undefined;
  readonly row: OutcomeRow | undefined;

  constructor(fields: RenderErrorFields, options?: ErrorOptions) {
    super(fields.message, options);
    this.code = fields.code;
    this.status = fields.status;
    this.billed = fields.billed;
    this.retryAt = fields.retryAt;
    this.docsUrl = fields.docsUrl;
    this.attempts = fields.attempts ?? 0;
    this.remaining = fields.remaining;
    this.row = fields.row;
  }

  /** Fields only, for logs and journals: no stack, no cause. */
  toJSON(): RenderErrorFields & { readonly name: "RenderError" } {
    return { name: this.name, ...this.fields(), retryAt: this.retryAt };
  }

  private fields(): RenderErrorFields {
    return {
      code: this.code,
      message: this.message,
      status: this.status,
      billed: this.billed,
      retryAt: this.retryAt,
      docsUrl: this.docsUrl,
      attempts: this.attempts,
      remaining: this.remaining,
    };
  }
}

/** True for a RenderError, also one from another copy of the package (matched by name and code). */
export function isRenderError(error: unknown): error is RenderError {
  return (
    error instanceof Error &&
    error.name === "RenderError" &&
    typeof (error as { code?: unknown }).code === "string"
  );
}

/** A request refused before it was sent, as the service would refuse it (`invalid_request`, not billed). */
export const invalidRequest = (message: string): RenderError => new RenderError({ code: "invalid_request", message, billed: false });

/**
 * The error of a job that the client did not send (again) because an earlier answer, `halt`, halted
 * it: that answer's code, status and `billed: false`, and a message that says so.
 */
export function haltedBy(halt: RenderError, attempts: number): RenderError {
  const status = halt.status === undefined ? "" : ` (${halt.status})`;
  const sent = attempts > 0 ? "sent again" : "sent";
  return new RenderError(
    {
      ...halt.toJSON(),
      message: `Not ${sent}: the client halted on an earlier ${halt.code}${status}: ${halt.message}`,
      billed: false,
      attempts,
    },
    { cause: halt },
  );
}
