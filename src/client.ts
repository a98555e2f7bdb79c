import { type Clock, systemClock } from "./clock.js";
import { checkApiKey, renderEndpoint } from "./endpoint.js";
import { RenderError } from "./errors.js";
import { type Logger, redactingLogger, silentLogger } from "./logger.js";
import { type Anomaly, classify } from "./outcomes.js";
import { type Transport, type TransportResponse, toTransportError } from "./transports/transport.js";
import { undiciTransport } from "./transports/undici.js";
import {
  type AttemptContext,
  compose,
  type Policy,
  type RenderRequest,
  type RenderResult,
  type Send,
} from "./types.js";

export interface RenderClientOptions {
  /** The service's base address; `/v1/render` is appended. `http://` only for loopback hosts. */
  readonly baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`; never logged, never in an error. */
  readonly apiKey: string;
  /**
   * Allows `http://` to a host that is not loopback, sending the key in clear.
   *
   * @default false
   */
  readonly allowInsecureHttp?: boolean;
  /**
   * Sends the requests. It never retries.
   *
   * @default undiciTransport()
   */
  readonly transport?: Transport;
  /**
   * Where the client logs: any pino-compatible logger. The key is scrubbed from everything it gets.
   *
   * @default a silent logger
   */
  readonly logger?: Logger;
  /** Extra policies, outside in, around each send (metrics, tracing). */
  readonly policies?: readonly Policy[];
  /**
   * The clock for every wait and every `Retry-After`; tests pass a fake one.
   *
   * @default the system clock
   */
  readonly clock?: Clock;
}

export interface RenderOptions {
  /** Cancels the job: every wait and every send stops, and the job fails with `aborted`. */
  readonly signal?: AbortSignal;
}

export interface RenderClient {
  /** Renders one document, or rejects with a RenderError. */
  render(request: RenderRequest, options?: RenderOptions): Promise<RenderResult>;
  /** Stops the jobs in progress (they fail with `aborted`), clears every timer and closes sockets. */
  close(): Promise<void>;
}

/** Builds a client. Options are checked here: a bad one throws a TypeError or RangeError at once. */
export function createRenderClient(options: RenderClientOptions): RenderClient {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Expected `createRenderClient` to get an options object.");
  }
  const url = renderEndpoint(options.baseUrl, options.allowInsecureHttp === true);
  const apiKey = checkApiKey(options.apiKey);
  const logger = redactingLogger(options.logger ?? silentLogger, [apiKey]);
  const clock = options.clock ?? systemClock;
  const transport = options.transport ?? undiciTransport();
  if (typeof transport?.send !== "function") {
    throw new TypeError("Expected `transport` to have a send(request) method.");
  }
  const closing = new AbortController();
  const headers = Object.freeze({ authorization: `Bearer ${apiKey}`, "content-type": "application/json" });
  const warned = new Set<Anomaly>();

  const attemptSend: Send = async function attemptSend(req, ctx) {
    if (ctx.signal.aborted) throw abortedBeforeSend(ctx);
    let response: TransportResponse | undefined;
    let failure: unknown;
    try {
      response = await transport.send({
        url,
        headers,
        body: JSON.stringify(req),
        request: req,
        signal: ctx.signal,
      });
    } catch (error) {
      failure = toTransportError(error, ctx.signal);
    }
    const now = clock.now();
    const outcome = classify(response ?? toTransportError(failure, ctx.signal), now);
    for (const anomaly of outcome.anomalies) {
      if (warned.has(anomaly)) continue;
      warned.add(anomaly);
      logger.warn({ anomaly, status: outcome.status, code: outcome.code }, anomalyMessages[anomaly]);
    }
    logger.debug(
      {
        attempt: ctx.attempt,
        status: outcome.status,
        code: outcome.code,
        billed: outcome.billed,
        message: outcome.message,
      },
      "render attempt",
    );
    if (outcome.kind === "success" && response) {
      return {
        body: response.body,
        contentType: contentTypeOf(response),
        status: response.status,
        headers: response.headers,
        billed: true,
        attempts: ctx.attempt,
        remaining: outcome.remaining,
      };
    }
    throw new RenderError(
      {
        code: outcome.code ?? "unknown_error",
        message: outcome.message,
        status: outcome.status,
        billed: outcome.billed,
        retryAt: outcome.retryAfter === undefined ? undefined : new Date(now + outcome.retryAfter),
        docsUrl: outcome.docsUrl,
        attempts: ctx.attempt,
        remaining: outcome.remaining,
      },
      { cause: failure },
    );
  };

  const send = compose(options.policies ?? [], attemptSend);

  return {
    async render(request, renderOptions = {}) {
      checkRequest(request);
      const signal = renderOptions.signal
        ? AbortSignal.any([renderOptions.signal, closing.signal])
        : closing.signal;
      return send(request, { signal, attempt: 1 });
    },
    async close() {
      closing.abort(new RenderError({ code: "aborted", message: "The client was closed.", billed: false }));
      await transport.close?.();
    },
  };
}

const anomalyMessages: Record<Anomaly, string> = {
  retry_after_invalid: "Ignored a Retry-After value that is not a delay or a date; backing off instead.",
  remaining_invalid: "Ignored an X-Renders-Remaining value that is not a non-negative integer.",
  code_status_mismatch: "The error code does not go with the HTTP status in the spec; classified by status.",
};

function abortedBeforeSend(ctx: AttemptContext): RenderError {
  const reason: unknown = ctx.signal.reason;
  const message = reason instanceof Error ? reason.message : "The job was aborted before it was sent.";
  return new RenderError(
    { code: "aborted", message, billed: false, attempts: ctx.attempt - 1 },
    { cause: reason },
  );
}

function contentTypeOf(response: TransportResponse): string {
  const value = response.headers["content-type"];
  return (Array.isArray(value) ? value[0] : value) ?? "application/octet-stream";
}

/** Refuses a request the service would reject as `invalid_request`, before sending (and paying nothing). */
function checkRequest(request: unknown): asserts request is RenderRequest {
  const fail = (message: string) => new RenderError({ code: "invalid_request", message, billed: false });
  if (typeof request !== "object" || request === null || Array.isArray(request)) {
    throw fail("Expected the request to be an object such as { html }.");
  }
  if (typeof (request as { html?: unknown }).html !== "string") {
    throw fail("Expected the request's `html` to be a string.");
  }
  try {
    JSON.stringify(request);
  } catch (error) {
    throw fail(`The request cannot be sent as JSON: ${(error as Error).message}`);
  }
}
