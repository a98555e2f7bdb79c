import type { Clock } from "../util/clock.js";
import type { Logger } from "../util/logger.js";
import { causeWithout, scrubText } from "../util/secrets.js";
import { RenderError } from "./errors.js";
import { type Anomaly, classify } from "./outcomes.js";
import { SetupCheck } from "./setup-check.js";
import type { Meter } from "./stats.js";
import { contentTypeOf, type SuccessCheck } from "./success-check.js";
import type { Tracing } from "./tracing.js";
import { type Transport, type TransportResponse, toTransportError } from "./transport.js";
import type { AttemptContext, RenderRequest, Send } from "./types.js";

export interface AttemptSettings {
  /** The absolute URL of `/v1/render`. */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly transport: Transport;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly meter: Meter;
  /** What must never appear in an error (the API key's forms): a service or a transport may quote it back. */
  readonly secrets?: readonly string[];
  /**
   * The JSON to send for a request: the client hands each job's, made once when the job began, so
   * that every send of it sends the same bytes.
   *
   * @default JSON.stringify
   */
  readonly bodyOf?: (req: RenderRequest) => string;
  /** Decides whether a 2xx is the document (see `Expectation`); without it, every 2xx is. */
  readonly checkSuccess?: SuccessCheck;
  /** Gives each send a span, when the client has telemetry. */
  readonly tracing?: Tracing | undefined;
}

/**
 * The innermost send: one request through the transport, both headers read, the outcome classified
 * by the table. It resolves with a rendered result or rejects with a RenderError; it never retries.
 */
export function attemptSend({
  url,
  headers,
  transport,
  clock,
  logger,
  meter,
  secrets = [],
  bodyOf = JSON.stringify,
  checkSuccess,
  tracing,
}: AttemptSettings): Send {
  const scrub = (text: string) => scrubText(text, secrets);
  const warned = new Set<Anomaly>();
  const setup = transport.target === undefined ? new SetupCheck(url) : new SetupCheck(transport.target, true);
  return async function attemptSend(req, ctx) {
    const { signal } = ctx;
    if (signal.aborted) throw abortedBeforeSend(ctx);
    let response: TransportResponse | undefined;
    let failure: unknown;
    const answered = ctx.owner?.sending();
    const span = tracing?.send(ctx);
    const sent = clock.now();
    try {
      const sendHeaders = span?.headers ? { ...headers, ...span.headers } : headers;
      response = await transport.send({ url, headers: sendHeaders, body: bodyOf(req), request: req, signal });
    } catch (error) {
      failure = toTransportError(error, signal);
    } finally {
      answered?.();
    }
    const now = clock.now();
    const outcome = classify(response ?? toTransportError(failure, signal), now, checkSuccess);
    span?.end(outcome);
    meter.recordAttempt(outcome, ctx.attempt, now - sent, ctx.jobId);
    for (const anomaly of outcome.anomalies) {
      if (warned.has(anomaly)) continue; // logged once, never thrown (DESIGN §3)
      warned.add(anomaly);
      const fields = { jobId: ctx.jobId, anomaly, status: outcome.status, code: outcome.code };
      logger.warn(fields, anomalyMessages[anomaly]);
    }
    logger.debug(
      {
        jobId: ctx.jobId,
        attempt: ctx.attempt,
        status: outcome.status,
        code: outcome.code,
        billed: outcome.billed,
        message: outcome.message,
      },
      "render attempt",
    );
    const retryAt = outcome.retryAfter === undefined ? undefined : new Date(now + outcome.retryAfter);
    if (outcome.kind === "success" && response) {
      setup.noteDocument();
      return {
        body: response.body,
        contentType: contentTypeOf(response.headers) ?? "application/octet-stream",
        status: response.status,
        headers: response.headers,
        billed: true,
        attempts: ctx.attempt,
        remaining: outcome.remaining,
        retryAt,
      };
    }
    const error = new RenderError(
      {
        code: outcome.code ?? "unknown_error",
        // A service or proxy may echo the Authorization header back: never let it into an error.
        message: scrub(outcome.message),
        status: outcome.status,
        billed: outcome.billed,
        retryAt,
        docsUrl: outcome.docsUrl === undefined ? undefined : scrub(outcome.docsUrl),
        attempts: ctx.attempt,
        remaining: outcome.remaining,
        row: { billed: outcome.billed, retry: outcome.retry, breakerFailure: outcome.breakerFailure, limiter: outcome.limiter },
      },
      { cause: causeWithout(failure, secrets) },
    );
    const thrown = setup.judge(error) ?? error;
    meter.recordFailure(thrown.code, thrown.message);
    throw thrown;
  };
}

const anomalyMessages: Record<Anomaly, string> = {
  retry_after_invalid: "Ignored a Retry-After value that is not a delay or a date; backing off instead.",
  remaining_invalid: "Ignored an X-Renders-Remaining value that is not a non-negative integer.",
  code_status_mismatch: "The error code does not go with the HTTP status in the spec; read both ways: maybe billed unless both readings agree, and resent only if both allow it.",
};

function abortedBeforeSend(ctx: AttemptContext): RenderError {
  const reason: unknown = ctx.signal.reason;
  const message = reason instanceof Error ? reason.message : "The job was aborted before it was sent.";
  return new RenderError({ code: "aborted", message, billed: false, attempts: ctx.attempt - 1 }, { cause: reason });
}
