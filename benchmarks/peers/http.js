// What the peers that throw on a failed answer share: one POST with undici, an error that carries
// what the answer said (status, the service's code, Retry-After).
import { request } from "undici";
import { renderRequest } from "./pool.js";

/** A non-2xx answer. `retryAfterMs` is undefined when the header was absent or unreadable. */
export class HttpError extends Error {
  constructor(status, { code, retryAfterMs }) {
    super(`HTTP ${status}${code ? ` ${code}` : ""}`);
    this.name = "HttpError";
    this.status = status;
    this.code = code;
    this.retryAfterMs = retryAfterMs;
  }
}

/** Retry-After in ms: delay-seconds (decimals tolerated) or an HTTP-date; undefined if absent or unreadable. */
export function retryAfterMs(value) {
  if (typeof value !== "string") return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** `error.code` of the service's JSON error body, if the body is one. */
function serviceCode(text) {
  try {
    return JSON.parse(text)?.error?.code;
  } catch {
    return undefined;
  }
}

/**
 * Sends one job with `undici.request`: resolves on a 2xx, throws an `HttpError` on any other status;
 * a network error is thrown as undici threw it.
 */
export async function sendOnce({ baseUrl, apiKey, job, signal }) {
  const { url, headers, body } = renderRequest(baseUrl, apiKey, job);
  const res = await request(url, { method: "POST", headers, body, signal });
  const text = await res.body.text();
  if (res.statusCode >= 200 && res.statusCode < 300) return;
  throw new HttpError(res.statusCode, { code: serviceCode(text), retryAfterMs: retryAfterMs(res.headers["retry-after"]) });
}
