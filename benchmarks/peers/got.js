// Contender: got 14, retrying POST on 408, 429 and 500 up to 5 times. got reads Retry-After itself
// (with no request time-out set, it waits any Retry-After however long); without one it backs off
// 1 s, doubling, plus up to 100 ms of noise. Its default errorCodes retry network errors (a reset too).
import got from "got";
import { codeOf, renderRequest, runPool } from "./pool.js";

const retry = { limit: 5, methods: ["POST"], statusCodes: [408, 429, 500] };

export async function renderJobs(run) {
  const { baseUrl, apiKey, signal } = run;
  return runPool(run, async (job) => {
    const { url, headers, body } = renderRequest(baseUrl, apiKey, job);
    try {
      await got.post(url, { headers, body, retry, responseType: "buffer", signal });
      return { ok: true };
    } catch (error) {
      return { ok: false, code: codeOf(error) };
    }
  });
}
