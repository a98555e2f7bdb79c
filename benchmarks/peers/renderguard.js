// Contender: renderguard, `createRenderClient({ baseUrl, apiKey, ...options })`, either K workers
// calling client.render (`renderJobs`) or a batch through client.renderMany with concurrency K
// (`renderBatch`, as a batch job uses it). `onStart(client)` runs before the first job and
// `onEnd(client)` after the last, before the client closes (after the timed part, by `run.defer`,
// when the harness gives it); an aborted `signal` closes the client, which aborts the jobs in flight.
import { performance } from "node:perf_hooks";
import { createRenderClient } from "../../dist/index.js";
import { arrival, codeOf, runPool, takingJobs } from "./pool.js";

export function renderJobs(run) {
  return withClient(run, (client) =>
    runPool(run, async (job) => {
      try {
        await client.render(job);
        return { ok: true };
      } catch (error) {
        return { ok: false, code: error.code ?? codeOf(error), retryAt: error.retryAt };
      }
    }),
  );
}

/**
 * The same run through `client.renderMany(source, { concurrency: run.workers })`: jobs waiting out a
 * `Retry-After` do not hold a place. Honours `run.arrivalsPerSecond`, `run.until` and `run.signal`
 * as runPool does; returns the outcomes in job order, in runPool's shape.
 */
export function renderBatch(run) {
  const { jobs, workers, signal } = run;
  const outcomes = new Array(jobs.length);
  const started = new Array(jobs.length);
  const t0 = performance.now();
  async function* source() {
    for (let index = 0; index < jobs.length; index++) {
      await arrival(run, t0, index);
      if (!takingJobs(run)) return;
      started[index] = { at: Date.now(), t: performance.now() };
      yield { id: String(index), ...jobs[index] };
    }
  }
  return withClient(run, async (client) => {
    for await (const outcome of client.renderMany(source(), { concurrency: workers })) {
      const index = Number(outcome.id);
      const { at, t } = started[index];
      const result = outcome.ok
        ? { ok: true }
        : { ok: false, code: signal?.aborted ? "aborted" : outcome.error.code, retryAt: outcome.error.retryAt };
      outcomes[index] = { ...result, ms: performance.now() - t, startedAt: at, doneAt: Date.now() };
    }
    return outcomes;
  });
}

/**
 * A client for `run`, handed to `use(client)`, whose outcomes it returns: `run.onStart` before,
 * `run.onEnd` after, closed when `run.signal` aborts and in any case at the end.
 */
async function withClient(run, use) {
  const { baseUrl, apiKey, signal, defer, options = {}, onStart, onEnd } = run;
  const client = createRenderClient({ baseUrl, apiKey, ...options });
  const close = () => void client.close();
  signal?.addEventListener("abort", close, { once: true });
  onStart?.(client);
  try {
    const outcomes = await use(client);
    onEnd?.(client);
    return outcomes;
  } finally {
    signal?.removeEventListener("abort", close);
    if (defer) defer(() => client.close());
    else await client.close();
  }
}
