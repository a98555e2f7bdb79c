// Shared by the scenario benchmarks: run N jobs, K in flight, through a client; count outcomes.
import { performance } from "node:perf_hooks";

/** Renders `count` distinct documents with `inFlight` workers; returns outcomes and timings. */
export async function runJobs(client, count, { inFlight = 16, arrivalsPerSecond } = {}) {
  const outcomes = new Array(count);
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const id = next++;
      if (arrivalsPerSecond) {
        const due = started + (id * 1000) / arrivalsPerSecond;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
      const jobStart = performance.now();
      try {
        await client.render({ html: `<h1>document ${id}</h1>` });
        outcomes[id] = { ok: true, ms: performance.now() - jobStart };
      } catch (error) {
        outcomes[id] = { ok: false, code: error.code, retryAt: error.retryAt, ms: performance.now() - jobStart };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));
  return { outcomes, wallMs: performance.now() - started };
}

export const fmt = (n, digits = 2) => Number(n).toFixed(digits);
