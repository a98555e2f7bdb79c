import { Pool } from "undici";
import {
  type Transport,
  type TransportRequest,
  type TransportResponse,
  toTransportError,
} from "../core/transport.js";
import type { ResponseHeaders } from "../core/types.js";
import { causeChain } from "../util/cause-chain.js";
import { startTimer, systemClock } from "../util/clock.js";
import { describe, resolveOptions } from "../util/options.js";
import { onAbort } from "../util/signals.js";
import { bodyCap, checkDeclaredLength, readStreamCapped } from "./body.js";
import { RequestSentProbe } from "./request-sent.js";
import { SocketReuse } from "./socket-reuse.js";

/** Options of `undiciTransport`. All optional. */
export interface UndiciTransportOptions {
  /**
   * Most sockets per origin. By default there is no cap here: the limiter caps sends in flight
   * (`limiter.concurrency`), and a pool no larger than that makes sends queue for a socket that is
   * still being freed or replaced after a reset (at 16 in flight over loopback, 5 to 20 % slower).
   *
   * @default Infinity
   */
  readonly connections?: number;
  /**
   * Time to open a connection, in milliseconds. A connect time-out is surely unsent, so it is retried.
   *
   * @default 10_000
   */
  readonly connectTimeout?: number;
  /**
   * Time from sending to the response's headers, in milliseconds. It has to cover a slow render; a
   * time-out here is ambiguous (the engine may have run), so keep it above the service's own render
   * time-out. undici's default is 300 s.
   *
   * @default 120_000
   */
  readonly headersTimeout?: number;
  /**
   * Longest pause between two chunks of the response body, in milliseconds.
   *
   * @default 30_000
   */
  readonly bodyTimeout?: number;
  /**
   * Time from sending to the last byte of the response, in milliseconds. `bodyTimeout` restarts with
   * every chunk, so without this a body that trickles in (a byte a second) holds a send as long as
   * it trickles. A time-out before the status arrived is ambiguous (`response_lost`); after a 2xx
   * arrived, the render was billed and its body is lost (`response_incomplete`). Keep it above
   * `headersTimeout`, with room to read the largest PDF.
   *
   * @default 180_000
   */
  readonly responseTimeout?: number;
  /**
   * Idle time after which a kept-alive socket is closed, in milliseconds: below the 5 s of Node's,
   * Apache's and uvicorn's servers, so the client, not the server, ends an idle socket. A server's
   * `Keep-Alive: timeout=N` hint shortens it (undici keeps a socket N - 2 s at most). A server that
   * closes a kept-alive socket under a send that then got no answer (it closes sockets just after
   * responding, or sooner than it says) gets every send on a fresh connection for a minute after:
   * such a send may have been billed and is never resent, so the next is kept off reused sockets.
   * Once a fresh connection is closed under its send too, the closes are the server's own (it
   * resets some after rendering), not stale sockets: sends reuse sockets again for the minute.
   *
   * @default 4_000
   */
  readonly keepAliveTimeout?: number;
  /**
   * Largest response body accepted, in bytes; a larger one fails with `response_too_large`. An error
   * answer's body is read to at most 1 MiB (or this, if smaller), and a longer one is classified by
   * its status alone.
   *
   * @default 100 * 1024 * 1024
   */
  readonly maxResponseBytes?: number;
}

export const undiciTransportDefaults: Readonly<Required<UndiciTransportOptions>> = Object.freeze({
  connections: Number.POSITIVE_INFINITY,
  connectTimeout: 10_000,
  headersTimeout: 120_000,
  bodyTimeout: 30_000,
  responseTimeout: 180_000,
  keepAliveTimeout: 4_000,
  maxResponseBytes: 100 * 1024 * 1024,
});

/** The default transport: an undici `Pool` per origin, with keep-alive and our own time-outs. */
export function undiciTransport(options: UndiciTransportOptions = {}): Transport {
  const opts = resolveOptions("transport", undiciTransportDefaults, options, {
    connections: { positive: true },
    connectTimeout: { positive: true },
    headersTimeout: { positive: true },
    bodyTimeout: { positive: true },
    responseTimeout: { positive: true },
    keepAliveTimeout: { positive: true },
    maxResponseBytes: { integer: true, positive: true },
  });
  if (!Number.isInteger(opts.connections) && opts.connections !== Number.POSITIVE_INFINITY) {
    throw new RangeError(`Expected \`transport.connections\` to be an integer > 0 or Infinity, got ${describe(opts.connections)}.`);
  }
  const pools = new Map<string, Pool>();
  const reuse = new SocketReuse(systemClock.now);
  // Every send of a client goes to the same URL: it is parsed once, not once a send.
  let target = { url: "", origin: "", path: "" };
  const targetOf = (href: string) => {
    if (target.url !== href) {
      const url = new URL(href);
      target = { url: href, origin: url.origin, path: url.pathname + url.search };
    }
    return target;
  };
  const poolFor = (origin: string): Pool => {
    let pool = pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: Number.isFinite(opts.connections) ? opts.connections : null,
        connectTimeout: opts.connectTimeout,
        keepAliveTimeout: opts.keepAliveTimeout,
      });
      pools.set(origin, pool);
    }
    return pool;
  };

  return {
    async send(request: TransportRequest): Promise<TransportResponse> {
      const { origin, path } = targetOf(request.url);
      const fresh = reuse.fresh(origin);
      let arrived: { status: number; headers: ResponseHeaders } | undefined;
      const probe = new RequestSentProbe(poolFor(origin));
      const stopResponseTimer = startTimer(opts.responseTimeout, () => probe.abort(responseTimedOut(opts.responseTimeout)));
      // The job's signal ends the request through the probe rather than undici's `signal` option: a
      // listener of undici's own on each request's signal cost more than the rest of the send.
      const { signal } = request;
      const abort = () => probe.abort(signal.reason);
      const stopListening = signal.aborted ? (abort(), undefined) : onAbort(signal, abort);
      try {
        const response = await probe.request({
          path,
          method: "POST",
          headers: request.headers,
          body: request.body,
          headersTimeout: opts.headersTimeout,
          bodyTimeout: opts.bodyTimeout,
          reset: fresh, // a connection for this send alone
        });
        const status = response.statusCode;
        const headers = response.headers as ResponseHeaders;
        arrived = { status, headers };
        try {
          const cap = bodyCap(status, opts.maxResponseBytes);
          checkDeclaredLength(headers["content-length"], cap, status, headers);
          const body = await readStreamCapped(response.body, cap, status, headers);
          return { status, headers, body };
        } catch (error) {
          // Stop reading; the stream's own abort error has nobody left to hear it.
          response.body.on("error", () => undefined).destroy();
          throw error;
        }
      } catch (error) {
        // A failure after the status arrived keeps it: a 2xx was billed even if its body was cut short.
        // Before that, only a request written whole may have been rendered (DESIGN §4, transport).
        if (!arrived && probe.sent && !request.signal.aborted && isClosedByPeer(error)) reuse.closedUnder(origin, fresh);
        throw toTransportError(error, request.signal, { response: arrived, sent: probe.sent });
      } finally {
        stopListening?.();
        stopResponseTimer();
      }
    },
    async close() {
      // Destroyed, not closed: a pool closes once its queued requests end, and a request still
      // connecting ends only at `connectTimeout`; the client aborted every job before this.
      const closing = [...pools.values()].map((pool) => pool.destroy());
      pools.clear();
      reuse.clear();
      await Promise.all(closing);
    },
  };
}

/** Codes of a socket its peer closed or reset: undici's "other side closed", and the system's. */
const PEER_CLOSED_CODES = new Set(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"]);

function isClosedByPeer(error: unknown): boolean {
  for (const { code } of causeChain(error)) if (typeof code === "string" && PEER_CLOSED_CODES.has(code)) return true;
  return false;
}

const responseTimedOut = (ms: number): Error =>
  new Error(`No complete response within ${ms} ms (transport.responseTimeout); the exchange was cut.`);
