// Contender: p-retry 7 wired the usual way around undici.request: throw on a non-2xx answer, an
// AbortError (never retried) for any status but 408, 429 and 500, 5 retries with p-retry's default
// backoff (1 s, doubling, no jitter); a network error is retried too (p-retry retries any error it
// is not told to abort on). With `honourRetryAfter`, a hand-written Retry-After wait: p-retry 7 has
// no per-error delay, so onFailedAttempt sleeps the answer's Retry-After, then p-retry adds its
// backoff.
import { setTimeout as sleep } from "node:timers/promises";
import pRetry, { AbortError } from "p-retry";
import { HttpError, sendOnce } from "./http.js";
import { codeOf, runPool } from "./pool.js";

/** The statuses the retry loops of the p-retry based peers resend. */
export const retryableStatuses = new Set([408, 429, 500]);

/** `sendOnce`, with an HttpError of any status but `retryableStatuses` wrapped in p-retry's AbortError. */
export async function sendOrAbort(send) {
  try {
    return await send();
  } catch (error) {
    throw error instanceof HttpError && !retryableStatuses.has(error.status) ? new AbortError(error) : error;
  }
}

/** p-retry's `onFailedAttempt` that sleeps the failed answer's Retry-After, unless no retry is left. */
export const sleepRetryAfter =
  (signal) =>
  async ({ error, retriesLeft }) => {
    if (retriesLeft > 0 && error.retryAfterMs !== undefined) await sleep(error.retryAfterMs, undefined, { signal });
  };

export async function renderJobs(run) {
  const { baseUrl, apiKey, signal, honourRetryAfter = false } = run;
  const onFailedAttempt = honourRetryAfter ? sleepRetryAfter(signal) : undefined;
  return runPool(run, async (job) => {
    try {
      await pRetry(() => sendOrAbort(() => sendOnce({ baseUrl, apiKey, job, signal })), { retries: 5, signal, onFailedAttempt });
      return { ok: true };
    } catch (error) {
      return { ok: false, code: codeOf(error) };
    }
  });
}
