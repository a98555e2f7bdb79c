import { isRenderError, type LocalErrorCode, type RenderError, type RenderErrorCode } from "./errors.js";
import { parseRendersRemaining, parseRetryAfter } from "./headers.js";
import type { OutcomeRow, RetryRule } from "./outcome-row.js";
import { isSpecErrorCode, RENDERS_REMAINING, RETRY_AFTER, type SpecErrorCode, specErrors } from "./spec.js";
import type { SuccessCheck } from "./success-check.js";
import { isTransportError, type TransportError, type TransportResponse } from "./transport.js";

/**
 * Most bytes of an error answer's body read (1 MiB): the service's error object is small, and a
 * proxy's page need not be read whole to be known as one. A longer one is classified by its status.
 */
export const MAX_ERROR_BODY_BYTES = 1024 * 1024;

/** Codes an outcome can have: the spec's, and the local ones a response or a transport can produce. */
export type OutcomeCode = SpecErrorCode | Exclude<LocalErrorCode, PolicyErrorCode>;

/** Local codes that policies give when they decline to send; no response or transport makes them. */
export type PolicyErrorCode = "circuit_open" | "quota_wait_too_long" | "paused_too_long" | "budget_exhausted";

const never = { billed: false, retry: "never", breakerFailure: false, limiter: "none" } as const;

/** The outcome table of DESIGN §2: the single source of truth for every failure. */
export const outcomes = {
  invalid_request: never,
  invalid_api_key: { ...never, limiter: "halt" },
  payment_required: { ...never, limiter: "halt" },
  not_found: never,
  render_timeout: { ...never, retry: "limited" },
  unsupported_file: never,
  // render_failed was billed: a retry bills again (spec, "Rules shown" 3).
  render_failed: { ...never, billed: true },
  extraction_failed: never,
  rate_limited: { ...never, retry: "always", limiter: "slow_down" },
  quota_exceeded: { ...never, retry: "if_wait_fits", limiter: "quota_out" },
  demo_busy: { ...never, retry: "always", limiter: "fewer_concurrent" },
  // Raised before the input is judged: resending the identical body is reasonable (spec, rule 4).
  internal_error: { ...never, retry: "always", breakerFailure: true },
  network_error: { ...never, retry: "always", breakerFailure: true },
  response_lost: { ...never, billed: "unknown", retry: "if_ambiguous_allowed", breakerFailure: true },
  upstream_unavailable: { ...never, retry: "always", breakerFailure: true },
  upstream_error: { ...never, billed: "unknown", retry: "if_ambiguous_allowed", breakerFailure: true },
  // "Every error is free except render_failed" (spec): an unknown code is free, and not understood.
  unknown_error: never,
  response_too_large: { ...never, billed: true },
  // The status said the engine ran; the body was lost on the way: billed, and resending bills again.
  response_incomplete: { ...never, billed: true },
  // A 2xx, so the engine may have run; resending may bill again and would get the same answer.
  unexpected_response: { ...never, billed: "unknown" },
  aborted: { ...never, billed: "unknown" },
  // The base URL is wrong (DESIGN §2, "Never worked"): no later job can succeed either.
  setup_failed: { ...never, limiter: "halt" },
} as const satisfies Record<OutcomeCode, OutcomeRow>;

/** The table's row for a code, or undefined for a code no response makes (a policy's refusal). */
export function outcomeRow(code: RenderErrorCode): OutcomeRow | undefined {
  return (outcomes as Partial<Record<RenderErrorCode, OutcomeRow>>)[code];
}

/** The row an error of a send is judged by (retry, breaker, limiter): the one it carries, else its code's. */
export function rowOf(error: RenderError): OutcomeRow | undefined {
  return error.row ?? outcomeRow(error.code);
}

/** True when a send's error is the service failing, which the table counts against a circuit breaker. */
export function isBreakerFailure(error: unknown): boolean {
  return isRenderError(error) && rowOf(error)?.breakerFailure === true;
}

/** Something in a response that renderguard could not trust; the client logs each kind once. */
export type Anomaly = "retry_after_invalid" | "remaining_invalid" | "code_status_mismatch";

/** A response or a transport failure, classified by the outcome table. */
export interface Outcome extends OutcomeRow {
  readonly kind: "success" | "retryable" | "fatal" | "halt";
  /** The failure's code; `undefined` for a success. */
  readonly code: OutcomeCode | undefined;
  readonly status: number | undefined;
  /** `Retry-After`, in milliseconds from `now`, when the response carried a valid one. */
  readonly retryAfter: number | undefined;
  /** `X-Renders-Remaining`, when the response carried a valid one. */
  readonly remaining: number | undefined;
  readonly message: string;
  readonly docsUrl: string | undefined;
  readonly anomalies: readonly Anomaly[];
}

const success: OutcomeRow = { billed: true, retry: "never", breakerFailure: false, limiter: "none" };

/**
 * Classifies what a transport returned or threw. `now` (ms since the epoch) dates `Retry-After`;
 * `check`, when given, decides whether a 2xx is the document or an `unexpected_response`.
 */
export function classify(input: TransportResponse | TransportError, now: number, check?: SuccessCheck): Outcome {
  if (isTransportError(input)) return classifyTransportError(input, now);
  const anomalies: Anomaly[] = [];
  const retryAfter = readHeader(input, RETRY_AFTER, anomalies, "retry_after_invalid", (v) =>
    parseRetryAfter(v, now),
  );
  const remaining = readHeader(
    input,
    RENDERS_REMAINING,
    anomalies,
    "remaining_invalid",
    parseRendersRemaining,
  );
  const { status } = input;
  if (status >= 200 && status < 300) {
    const unexpected = check?.(input);
    if (unexpected !== undefined) {
      const fields = { code: "unexpected_response" as const, status, retryAfter, remaining, message: unexpected, docsUrl: undefined, anomalies };
      return outcomeOf(outcomes.unexpected_response, "fatal", fields);
    }
    const fields = { code: undefined, status, retryAfter, remaining, message: "Rendered.", docsUrl: undefined, anomalies };
    return outcomeOf(success, "success", fields);
  }
  const body = parseErrorBody(input.body);
  let code: OutcomeCode;
  let row: OutcomeRow;
  if (body && isSpecErrorCode(body.code)) {
    code = body.code;
    row = outcomes[code];
    if (specErrors[body.code].status !== status) {
      anomalies.push("code_status_mismatch");
      row = bothReadings(row, rowForStatus(status, codeForStatus(status)));
    }
  } else {
    code = body ? "unknown_error" : status >= 500 ? codeForBodilessServerError(status) : codeForStatus(status);
    row = rowForStatus(status, code);
  }
  const message = body?.message ?? `The service answered HTTP ${status} without its error body.`;
  const fields = { code, status, retryAfter, remaining, message, docsUrl: body?.docsUrl, anomalies };
  return outcomeOf(row, kindOf(row), fields);
}

/** The row for `code` when only `status` can be trusted. */
function rowForStatus(status: number, code: OutcomeCode): OutcomeRow {
  // Without a trustworthy code, a 422 may be render_failed (billed) or extraction_failed (free).
  return status === 422 && code === "unknown_error" ? { ...outcomes[code], billed: "unknown" } : outcomes[code];
}

/** Retry rules from the one that resends most freely to the one that never does. */
const retryStrictness: readonly RetryRule[] = ["always", "limited", "if_wait_fits", "if_ambiguous_allowed", "never"];

/**
 * A response whose body's code and status disagree (a 500 saying `render_failed`), read both ways
 * (DESIGN §2): billed `unknown` unless both readings agree, resent only as the stricter reading
 * allows, a breaker failure if either reading is one, and the limiter told what the status says
 * (else what the code says): a 429 slows sending whatever its body claims.
 */
function bothReadings(byCode: OutcomeRow, byStatus: OutcomeRow): OutcomeRow {
  const stricter = Math.max(retryStrictness.indexOf(byCode.retry), retryStrictness.indexOf(byStatus.retry));
  return {
    billed: byCode.billed === byStatus.billed ? byCode.billed : "unknown",
    retry: retryStrictness[stricter] ?? "never",
    breakerFailure: byCode.breakerFailure || byStatus.breakerFailure,
    limiter: byStatus.limiter === "none" ? byCode.limiter : byStatus.limiter,
  };
}

function classifyTransportError(error: TransportError, now: number): Outcome {
  const { status } = error;
  if (status !== undefined && !(status >= 200 && status < 300)) {
    // The error body was lost or too large: classify by the status and headers that did arrive.
    return classify({ status, headers: error.headers ?? {}, body: new Uint8Array() }, now);
  }
  const code: OutcomeCode =
    status !== undefined
      ? error.failure === "too_large"
        ? "response_too_large"
        : error.failure === "unreadable"
          ? "unexpected_response"
          : "response_incomplete"
      : error.failure === "connect"
        ? "network_error"
        : error.failure === "refused"
          ? "invalid_request"
          : error.failure === "aborted"
            ? "aborted"
            : "response_lost";
  const row = outcomes[code];
  const headers = error.headers ?? {};
  const fields = {
    code,
    status,
    retryAfter: parseRetryAfter(headers[RETRY_AFTER], now),
    remaining: parseRendersRemaining(headers[RENDERS_REMAINING]),
    message: error.message,
    docsUrl: undefined,
    anomalies: [],
  };
  // An abort before the whole request was written rendered nothing (DESIGN §4, transport).
  return outcomeOf(row, kindOf(row), fields, error.written ? row.billed : false);
}

/** What an outcome says beyond its row of the table. */
type OutcomeFields = Omit<Outcome, keyof OutcomeRow | "kind">;

/**
 * The outcome of `row`, written out field by field: every outcome gets one shape (spreading the row
 * into it made classify the costliest step of a successful render).
 */
function outcomeOf(row: OutcomeRow, kind: Outcome["kind"], fields: OutcomeFields, billed = row.billed): Outcome {
  return {
    billed,
    retry: row.retry,
    breakerFailure: row.breakerFailure,
    limiter: row.limiter,
    kind,
    code: fields.code,
    status: fields.status,
    retryAfter: fields.retryAfter,
    remaining: fields.remaining,
    message: fields.message,
    docsUrl: fields.docsUrl,
    anomalies: fields.anomalies,
  };
}

function kindOf(row: OutcomeRow): Outcome["kind"] {
  if (row.limiter === "halt") return "halt";
  return row.retry === "never" ? "fatal" : "retryable";
}

/** The code a status implies when the body names none the spec pairs with it. */
function codeForStatus(status: number): OutcomeCode {
  if (status === 429) return "rate_limited"; // three codes share 429: the one that waits and retries
  if (status === 503) return "upstream_unavailable";
  if (status > 500) return "upstream_error";
  const only = Object.entries(specErrors).filter(([, spec]) => spec.status === status);
  return only.length === 1 && only[0] ? (only[0][0] as SpecErrorCode) : "unknown_error";
}

/** A 5xx without the service's error body came from a proxy or a gateway (DESIGN §2). */
function codeForBodilessServerError(status: number): OutcomeCode {
  return status === 503 ? "upstream_unavailable" : "upstream_error";
}

function readHeader<T>(
  response: TransportResponse,
  name: string,
  anomalies: Anomaly[],
  anomaly: Anomaly,
  parse: (value: TransportResponse["headers"][string]) => T | undefined,
): T | undefined {
  const raw = response.headers[name];
  const value = parse(raw);
  if (value === undefined && raw !== undefined) anomalies.push(anomaly);
  return value;
}

interface ErrorBody {
  readonly code: string;
  readonly message: string | undefined;
  readonly docsUrl: string | undefined;
}

/**
 * The service's error object, or `undefined` when the body is not one (HTML, empty, other JSON, or
 * longer than any transport of ours reads of an error answer).
 */
function parseErrorBody(body: Uint8Array): ErrorBody | undefined {
  if (body.byteLength === 0 || body.byteLength > MAX_ERROR_BODY_BYTES) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8"));
  } catch {
    return undefined;
  }
  const error = (parsed as { error?: unknown } | null)?.error as Record<string, unknown> | undefined;
  if (typeof error !== "object" || error === null || typeof error.code !== "string") return undefined;
  return {
    code: error.code,
    message: typeof error.message === "string" ? error.message : undefined,
    docsUrl: typeof error.docs_url === "string" ? error.docs_url : undefined,
  };
}
