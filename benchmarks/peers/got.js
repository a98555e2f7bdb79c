// Contender: got 14, retrying POST on 408, 429 and 500 up to 5 times. got reads Retry-After itself;
// without one it backs off 1 s, doubling, plus up to 100 ms of noise.
import got from "got";
import { codeOf, renderRequest, runPool } from "./pool.js";

const retry = { limit: 5, methods: ["POST"], statusCodes: [408, 429, 500] };

export async function renderJobs({ baseUrl, apiKey, jobs, workers, signal, until }) {
  return runPool(
    jobs,
    workers,
    async (job) => {
      const { url, headers, body } = renderRequest(baseUrl, apiKey, job);
      try {
        await got.post(url, { headers, body, retry, responseType: "buffer", signal });
        return { ok: true };
      } catch (error) {
        return { ok: false, code: codeOf(error) };
      }
    },
    { signal, until },
  );
}
