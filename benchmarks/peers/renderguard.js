// Contender: renderguard, `createRenderClient({ baseUrl, apiKey, ...options })`, either K workers
// calling client.render (`renderJobs`) or a batch through client.renderMany with concurrency K
// (`renderBatch`, as a batch job uses it). `onStart(client)` runs before the first job and
// `onEnd(client)` after the last, before the client closes; an aborted `signal` closes the client,
// which aborts the jobs in flight.
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { createRenderClient } from "../../dist/index.js";
import { codeOf, runPool } from "./pool.js";

export async function renderJobs(run) {
  const { baseUrl, apiKey, signal, options = {}, onStart, onEnd } = run;
  const client = createRenderClient({ baseUrl, apiKey, ...options });
  const close = () => void client.close();
  signal?.addEventListener("abort", close, { once: true });
  onStart?.(client);
  try {
    const outcomes = await runPool(run, async (job) => {
      try {
        await client.render(job);
        return { ok: true };
      } catch (error) {
        return { ok: false, code: error.code ?? codeOf(error), retryAt: error.retryAt };
      }
    });
    onEnd?.(client);
    return outcomes;
  } finally {
    signal?.removeEventListener("abort", close);
    await client.close();
  }
}

/**
 * The same run through `client.renderMany(source, { concurrency: run.workers })`: jobs waiting out a
 * `Retry-After` do not hold a place. Honours `run.arrivalsPerSecond`, `run.until` and `run.signal`
 * as runPool does; returns the outcomes in job order, in runPool's shape.
 */
export async function renderBatch(run) {
  const { baseUrl, apiKey, jobs, workers, signal, until, arrivalsPerSecond, options = {}, onStart, onEnd } = run;
  const client = createRenderClient({ baseUrl, apiKey, ...options });
  const close = () => void client.close();
  signal?.addEventListener("abort", close, { once: true });
  onStart?.(client);
  const outcomes = new Array(jobs.length);
  const started = new Array(jobs.length);
  const t0 = performance.now();
  async function* source() {
    for (let index = 0; index < jobs.length; index++) {
      if (arrivalsPerSecond) {
        const wait = t0 + (index * 1000) / arrivalsPerSecond - performance.now();
        if (wait > 0) await sleep(wait, undefined, { signal }).catch(() => undefined);
      }
      if (signal?.aborted || (until !== undefined && Date.now() >= until)) return;
      started[index] = { at: Date.now(), t: performance.now() };
      yield { id: String(index), ...jobs[index] };
    }
  }
  try {
    for await (const outcome of client.renderMany(source(), { concurrency: workers })) {
      const index = Number(outcome.id);
      const { at, t } = started[index];
      const result = outcome.ok
        ? { ok: true }
        : { ok: false, code: signal?.aborted ? "aborted" : outcome.error.code, retryAt: outcome.error.retryAt };
      outcomes[index] = { ...result, ms: performance.now() - t, startedAt: at, doneAt: Date.now() };
    }
    onEnd?.(client);
    return outcomes;
  } finally {
    signal?.removeEventListener("abort", close);
    await client.close();
  }
}
