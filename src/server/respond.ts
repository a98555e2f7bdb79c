import type { ServerResponse } from "node:http";
import { RENDERS_REMAINING, RETRY_AFTER, type SpecErrorCode, specErrors } from "../core/spec.js";
import type { RetryAfterStyle } from "./scenario.js";
import type { Timers } from "./timers.js";

/** What the server answers to one request. */
export type Decision =
  | {
      readonly kind: "pdf";
      readonly body: Uint8Array;
      /** Written in 8 pieces over this many milliseconds, when set (a `drip` fault). */
      readonly dripMs?: number | undefined;
    }
  | {
      readonly kind: "error";
      readonly code: SpecErrorCode;
      readonly message?: string;
      /** `Retry-After`, in milliseconds. */
      readonly retryAfterMs?: number;
    }
  | {
      readonly kind: "proxy";
      readonly status: 502 | 503;
      /** True when the engine ran before the proxy lost the answer. */
      readonly billed: boolean;
      readonly retryAfterMs?: number;
    }
  | { readonly kind: "reset" };

/** Default message of each code; wording is free-form (spec, "Error object"). */
const messages: Record<SpecErrorCode, string> = {
  invalid_request: "The request is invalid.",
  invalid_api_key: "The API key is missing, malformed or not valid.",
  payment_required: "The account has unpaid invoices; renders are paused until it is settled.",
  not_found: "No such endpoint.",
  render_timeout: "The page took too long to render.",
  unsupported_file: "This file type is not supported.",
  render_failed: "The page failed to render.",
  extraction_failed: "No content could be extracted from the file.",
  rate_limited: "Too many requests; slow down and retry after the Retry-After delay.",
  quota_exceeded: "The render quota is used up until the next period.",
  demo_busy: "The demo key is busy with another render; retry after the Retry-After delay.",
  internal_error: "Something went wrong on our side. Resending the same request is safe.",
};

/** A `Retry-After` value for a wait of `ms` from `now` (ms since the epoch), in the scenario's style. */
export function formatRetryAfter(ms: number, style: Required<RetryAfterStyle>, now: number): string {
  const wait = Math.max(0, ms);
  if (style.format === "http-date") return new Date(Math.ceil((now + wait) / 1000) * 1000).toUTCString();
  return style.rounding === "ceil" ? String(Math.ceil(wait / 1000)) : String(Math.round(wait) / 1000);
}

/** The page a proxy answers with: HTML, not the service's error object. */
const proxyPage = (status: 502 | 503): string => {
  const title = status === 502 ? "502 Bad Gateway" : "503 Service Temporarily Unavailable";
  const body = `<center><h1>${title}</h1></center><hr><center>nginx</center>`;
  return `<html><head><title>${title}</title></head><body>${body}</body></html>\n`;
};

/** Everything needed to write a decision besides the decision itself. */
export interface WriteContext {
  readonly docsUrl: string;
  readonly retryAfter: Required<RetryAfterStyle>;
  readonly now: number;
  /** `X-Renders-Remaining` to send; undefined when the key has no quota (or is unknown). */
  readonly remaining: number | undefined;
  /** The server's timers, which a dripping body waits on. */
  readonly timers: Timers;
}

/** Writes a decision other than `reset`; returns the status sent. */
export function writeDecision(res: ServerResponse, decision: Decision, ctx: WriteContext): number {
  const headers: Record<string, string> = {};
  if (ctx.remaining !== undefined && decision.kind !== "proxy")
    headers[RENDERS_REMAINING] = String(ctx.remaining);
  if (decision.kind !== "pdf" && decision.kind !== "reset" && decision.retryAfterMs !== undefined) {
    headers[RETRY_AFTER] = formatRetryAfter(decision.retryAfterMs, ctx.retryAfter, ctx.now);
  }
  if (decision.kind === "pdf") {
    const pdfHeaders = { ...headers, "content-type": "application/pdf" };
    if (decision.dripMs === undefined) return send(res, 200, pdfHeaders, decision.body);
    res.writeHead(200, { ...pdfHeaders, "content-length": String(decision.body.byteLength) });
    drip(res, decision.body, decision.dripMs, ctx.timers).catch(() => res.destroy());
    return 200;
  }
  if (decision.kind === "proxy") {
    return send(
      res,
      decision.status,
      { ...headers, "content-type": "text/html" },
      proxyPage(decision.status),
    );
  }
  if (decision.kind === "reset") throw new TypeError("A reset has no response to write.");
  const { code } = decision;
  const error = { code, message: decision.message ?? messages[code], docs_url: `${ctx.docsUrl}#${code}` };
  const body = JSON.stringify({ error });
  return send(res, specErrors[code].status, { ...headers, "content-type": "application/json" }, body);
}

/** Writes `body` in 8 pieces, `dripMs / 8` apart; stops when the client went away. */
async function drip(res: ServerResponse, body: Uint8Array, dripMs: number, timers: Timers): Promise<void> {
  const pieces = 8;
  const size = Math.ceil(body.byteLength / pieces);
  for (let at = 0; at < body.byteLength; at += size) {
    await timers.sleep(dripMs / pieces);
    if (res.destroyed) return;
    res.write(body.subarray(at, at + size));
  }
  res.end();
}

function send(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: string | Uint8Array,
) {
  res.writeHead(status, { ...headers, "content-length": String(Buffer.byteLength(body)) });
  res.end(body);
  return status;
}
