// The worker loop every contender shares, so contenders differ only in how they send one job.
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Renders `run.jobs` with `run.workers` concurrent workers; `sendJob(job, index)` resolves
 * `{ ok, code?, retryAt? }`. Returns one outcome per job, in job order: `{ ok, code?, retryAt?, ms,
 * startedAt, doneAt }` (`startedAt` and `doneAt` in ms since the epoch, the reference server's clock);
 * undefined for a job never started.
 * - `run.signal` stops the run: workers take no more jobs, and the jobs in flight count as `aborted`
 *   at once (whatever the contender still does with them, it does after the run).
 * - `run.until` (ms since the epoch) stops the workers taking new jobs; the ones started finish.
 * - `run.arrivalsPerSecond`: job `i` arrives `i / arrivalsPerSecond` s after the start and is not
 *   started before (jobs arriving steadily); undefined for all at once.
 */
export async function runPool(run, sendJob) {
  const { jobs, workers, signal } = run;
  const outcomes = new Array(jobs.length);
  const started = performance.now();
  const stopped = signal ? new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true })) : undefined;
  let next = 0;
  const worker = async () => {
    while (next < jobs.length && takingJobs(run)) {
      const index = next++;
      await arrival(run, started, index);
      if (signal?.aborted) return;
      const startedAt = Date.now();
      const t0 = performance.now();
      const sent = Promise.resolve()
        .then(() => sendJob(jobs[index], index))
        .catch((error) => ({ ok: false, code: codeOf(error) }));
      const outcome = await (stopped ? Promise.race([sent, stopped.then(() => ({ ok: false, code: "aborted" }))]) : sent);
      outcomes[index] = { ...outcome, ms: performance.now() - t0, startedAt, doneAt: Date.now() };
    }
  };
  await Promise.all(Array.from({ length: Math.min(workers, jobs.length) }, worker));
  return outcomes;
}

/** True while `run` still takes new jobs: not stopped by `run.signal`, not past `run.until`. */
export const takingJobs = ({ signal, until }) => !signal?.aborted && !(until !== undefined && Date.now() >= until);

/**
 * Waits until job `index` of `run` arrives, `index / run.arrivalsPerSecond` s after `startedMs` (a
 * `performance.now()` time), or until `run.signal` stops the run; at once when all arrive together.
 */
export async function arrival(run, startedMs, index) {
  if (!run.arrivalsPerSecond) return;
  const wait = startedMs + (index * 1000) / run.arrivalsPerSecond - performance.now();
  if (wait > 0) await sleep(wait, undefined, { signal: run.signal }).catch(() => undefined);
}

/** The request every contender sends for a job: the same bytes, so the ledger's hashes match. */
export function renderRequest(baseUrl, apiKey, job) {
  return {
    url: `${baseUrl}/v1/render`,
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(job),
  };
}

/** A failed job's code: the HTTP status a peer saw, "aborted" for a stopped run, else the error's code. */
export function codeOf(error) {
  if (error?.name === "AbortError" || error?.code === "ABORT_ERR" || error?.code === 20) return "aborted";
  return error?.status ?? error?.response?.statusCode ?? error?.statusCode ?? error?.code ?? error?.name ?? "error";
}
