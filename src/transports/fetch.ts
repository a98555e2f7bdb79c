import {
  type Transport,
  type TransportRequest,
  type TransportResponse,
  toTransportError,
} from "../core/transport.js";
import type { HeaderValue } from "../core/types.js";
import { systemClock } from "../util/clock.js";
import { resolveOptions } from "../util/options.js";
import { linkSignals } from "../util/signals.js";
import { bodyCap, checkDeclaredLength, readCapped } from "./body.js";

/** Options of `fetchTransport`. All optional. */
export interface FetchTransportOptions {
  /**
   * The `fetch` to call: the global one, or any compatible function (a runtime's own, a test double).
   *
   * @default globalThis.fetch
   */
  readonly fetch?: typeof globalThis.fetch;
  /**
   * Time from sending to a complete response, in milliseconds. A time-out is ambiguous (the engine
   * may have run), so keep it above the service's own render time-out.
   *
   * @default 120_000
   */
  readonly timeout?: number;
  /**
   * Largest response body accepted, in bytes; a larger one fails with `response_too_large`. An error
   * answer's body is read to at most 1 MiB (or this, if smaller), and a longer one is classified by
   * its status alone.
   *
   * @default 100 * 1024 * 1024
   */
  readonly maxResponseBytes?: number;
}

const EXCHANGE_ENDED = Symbol("exchange ended");

/** A transport over any `fetch`, for runtimes without undici or callers with their own. */
export function fetchTransport(options: FetchTransportOptions = {}): Transport {
  const opts = resolveOptions(
    "transport",
    { fetch: globalThis.fetch, timeout: 120_000, maxResponseBytes: 100 * 1024 * 1024 },
    options,
    { timeout: { positive: true }, maxResponseBytes: { integer: true, positive: true } },
  );
  if (typeof opts.fetch !== "function") {
    throw new TypeError("Expected `transport.fetch` to be a function: this runtime has no global fetch.");
  }
  return {
    async send(request: TransportRequest): Promise<TransportResponse> {
      const timedOut = new AbortController();
      const done = new AbortController();
      const signal = linkSignals(request.signal, timedOut.signal);
      systemClock.sleep(opts.timeout, done.signal).then(
        () => timedOut.abort(new Error(`No complete response within ${opts.timeout} ms.`)),
        () => undefined, // the exchange ended first
      );
      let arrived: { status: number; headers: Record<string, HeaderValue> } | undefined;
      try {
        const response = await opts.fetch(request.url, {
          method: "POST",
          headers: request.headers,
          body: request.body,
          signal: signal.signal,
          // A redirect is the service's answer, never followed: the key must not go to another origin.
          redirect: "manual",
        });
        const { status } = response;
        const headers = headersToRecord(response.headers);
        arrived = { status, headers };
        try {
          const cap = bodyCap(status, opts.maxResponseBytes);
          checkDeclaredLength(headers["content-length"], cap, status, headers);
          const body = response.body ? await readCapped(response.body, cap, status, headers) : new Uint8Array();
          return { status, headers, body };
        } catch (error) {
          await response.body?.cancel().catch(() => undefined);
          throw error;
        }
      } catch (error) {
        // A failure after the status arrived keeps it: a 2xx was billed even if its body was cut short.
        throw toTransportError(error, request.signal, { response: arrived });
      } finally {
        done.abort(EXCHANGE_ENDED);
        signal.dispose();
      }
    },
  };
}

/** A fetch `Headers` as a record with lower-case names (repeated headers arrive joined by ", "). */
function headersToRecord(headers: Headers): Record<string, HeaderValue> {
  const record: Record<string, HeaderValue> = {};
  headers.forEach((value, name) => {
    record[name] = value;
  });
  return record;
}
