// Contender: a hand-written retry loop over undici.request. On 429, 408 and 500 it waits the
// Retry-After (delay-seconds or HTTP-date) when there is one, else exponential backoff with full
// jitter; it gives up after 5 retries and never retries any other code, nor a network error.
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import { retryAfterMs } from "./http.js";
import { renderRequest, runPool } from "./pool.js";

const retryable = new Set([408, 429, 500]);
const maxRetries = 5;
const baseDelayMs = 500;
const maxDelayMs = 30_000;

/** Full jitter: uniform in [0, min(max, base * 2^retry)). */
const backoffMs = (retry) => Math.random() * Math.min(maxDelayMs, baseDelayMs * 2 ** retry);

export async function renderJobs(run) {
  const { baseUrl, apiKey, signal } = run;
  return runPool(run, async (job) => {
    const { url, headers, body } = renderRequest(baseUrl, apiKey, job);
    for (let retry = 0; ; retry++) {
      const res = await request(url, { method: "POST", headers, body, signal });
      await res.body.arrayBuffer();
      if (res.statusCode >= 200 && res.statusCode < 300) return { ok: true };
      if (!retryable.has(res.statusCode) || retry === maxRetries) return { ok: false, code: res.statusCode };
      await sleep(retryAfterMs(res.headers["retry-after"]) ?? backoffMs(retry), undefined, { signal });
    }
  });
}
