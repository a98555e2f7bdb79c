// Contender: the stack the packages suggest, wired by hand as a careful user would, outside in:
// - p-retry: resends 408, 429, 500, network errors and calls the open breaker refused, 5 retries,
//   default backoff; it waits the answer's Retry-After first (onFailedAttempt), and a Retry-After
//   over a minute fails the job at once rather than holding it for hours;
// - an opossum breaker: counts 5xx and network errors as failures but not 4xx (errorFilter), opens
//   at 50 % failures over 10 s once 10 calls were seen, half-opens after 10 s; no time-out of its
//   own (a render may be slow, and opossum's time-out aborts through a shared controller);
// - a Bottleneck: at most `workers` sends at once, and stopped, dropping what waits, once an answer
//   says no send can succeed for a long while (401, 402, or a 429 whose Retry-After is over a
//   minute): later jobs fail at once, unsent. X-Renders-Remaining is not fed to its reservoir: a
//   reservoir at 0 holds queued jobs until something refills it, and nothing says when.
import Bottleneck from "bottleneck";
import CircuitBreaker from "opossum";
import pRetry, { AbortError } from "p-retry";
import { HttpError, sendOnce } from "./http.js";
import { retryableStatuses, sleepRetryAfter } from "./p-retry.js";
import { codeOf, runPool } from "./pool.js";

const maxRetryAfterMs = 60_000;

/** An answer after which nothing else this key sends can succeed for a long while. */
const sendsNothingSoon = (error) =>
  error instanceof HttpError && (error.status === 401 || error.status === 402 || (error.status === 429 && error.retryAfterMs > maxRetryAfterMs));

export async function renderJobs(run) {
  const { baseUrl, apiKey, workers, signal } = run;
  const limiter = new Bottleneck({ maxConcurrent: workers });
  const breaker = new CircuitBreaker((job) => limiter.schedule(() => sendOnce({ baseUrl, apiKey, job, signal })), {
    timeout: false,
    resetTimeout: 10_000,
    volumeThreshold: 10,
    errorFilter: (error) => error instanceof Bottleneck.BottleneckError || (error instanceof HttpError && error.status < 500),
  });
  let stoppedBy;
  const attempt = async (job) => {
    try {
      return await breaker.fire(job);
    } catch (error) {
      if (error instanceof Bottleneck.BottleneckError) throw new AbortError(stoppedBy ?? error);
      if (sendsNothingSoon(error) && !stoppedBy) {
        stoppedBy = error;
        void limiter.stop({ dropWaitingJobs: true });
      }
      const final = sendsNothingSoon(error) || (error instanceof HttpError && !retryableStatuses.has(error.status));
      throw final ? new AbortError(error) : error;
    }
  };
  try {
    return await runPool(run, async (job) => {
      try {
        await pRetry(() => attempt(job), { retries: 5, signal, onFailedAttempt: sleepRetryAfter(signal) });
        return { ok: true };
      } catch (error) {
        return { ok: false, code: codeOf(error) };
      }
    });
  } finally {
    breaker.shutdown();
    if (!stoppedBy) await limiter.stop({ dropWaitingJobs: true });
  }
}
