// The worker loop every contender shares, so contenders differ only in how they send one job.
import { performance } from "node:perf_hooks";

/**
 * Renders `jobs` with `workers` concurrent workers; `sendJob(job, index)` resolves `{ ok, code? }`.
 * Returns one outcome per job, in job order: `{ ok, code?, ms, startedAt, doneAt }` (`startedAt` and
 * `doneAt` in ms since the epoch, the reference server's clock); undefined for a job never started.
 * `signal` stops the workers taking jobs (the contender aborts its own sends); `until` (ms since the
 * epoch) stops them taking new jobs but lets the ones started finish.
 */
export async function runPool(jobs, workers, sendJob, { signal, until } = {}) {
  const outcomes = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length && !signal?.aborted && !(until !== undefined && Date.now() >= until)) {
      const index = next++;
      const startedAt = Date.now();
      const t0 = performance.now();
      let outcome;
      try {
        outcome = await sendJob(jobs[index], index);
      } catch (error) {
        outcome = { ok: false, code: codeOf(error) };
      }
      outcomes[index] = { ...outcome, ms: performance.now() - t0, startedAt, doneAt: Date.now() };
    }
  };
  await Promise.all(Array.from({ length: Math.min(workers, jobs.length) }, worker));
  return outcomes;
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
