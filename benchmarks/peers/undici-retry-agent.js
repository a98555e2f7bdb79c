// Contender: undici's RetryAgent around an Agent, for POST on 408, 429 and 500, 5 retries. Its other
// options keep undici 7's defaults (lib/handler/retry-handler.js): Retry-After read (seconds or
// HTTP-date) but capped at maxTimeout 30 s, else 500 ms doubling without jitter; network errors
// (ECONNRESET among them) retried; a retryable status that is still failing after the last retry
// rejects with RequestRetryError.
import { Agent, RetryAgent, request } from "undici";
import { codeOf, renderRequest, runPool } from "./pool.js";

export async function renderJobs(run) {
  const { baseUrl, apiKey, signal, defer } = run;
  const dispatcher = new RetryAgent(new Agent(), { methods: ["POST"], statusCodes: [408, 429, 500], maxRetries: 5 });
  try {
    return await runPool(run, async (job) => {
      const { url, headers, body } = renderRequest(baseUrl, apiKey, job);
      try {
        const res = await request(url, { dispatcher, method: "POST", headers, body, signal });
        await res.body.arrayBuffer();
        return res.statusCode >= 200 && res.statusCode < 300 ? { ok: true } : { ok: false, code: res.statusCode };
      } catch (error) {
        return { ok: false, code: codeOf(error) };
      }
    });
  } finally {
    if (defer) defer(() => dispatcher.close()); // after the timed part
    else await dispatcher.close();
  }
}
