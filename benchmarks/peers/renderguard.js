// Contender: renderguard, `createRenderClient({ baseUrl, apiKey, ...options })`, K workers calling
// client.render. `onStart(client)` runs before the first job and `onEnd(client)` after the last,
// before the client closes; an aborted `signal` closes the client, which aborts the jobs in flight.
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
