// Contender: p-retry 7 wired the usual way around undici.request: throw on a non-2xx answer, an
// AbortError for a 4xx other than 408 and 429, default backoff (1 s, doubling, no jitter), 5 retries.
// It does not read Retry-After.
import pRetry, { AbortError } from "p-retry";
import { request } from "undici";
import { codeOf, renderRequest, runPool } from "./pool.js";

class HttpError extends Error {
  constructor(status) {
    super(`HTTP ${status}`);
    this.status = status;
  }
}

export async function renderJobs({ baseUrl, apiKey, jobs, workers, signal, until }) {
  return runPool(
    jobs,
    workers,
    async (job) => {
      const { url, headers, body } = renderRequest(baseUrl, apiKey, job);
      const attempt = async () => {
        const res = await request(url, { method: "POST", headers, body, signal });
        const bytes = await res.body.arrayBuffer();
        if (res.statusCode >= 200 && res.statusCode < 300) return bytes;
        const error = new HttpError(res.statusCode);
        const permanent = res.statusCode >= 400 && res.statusCode < 500 && res.statusCode !== 408 && res.statusCode !== 429;
        throw permanent ? new AbortError(error) : error;
      };
      try {
        await pRetry(attempt, { retries: 5, signal });
        return { ok: true };
      } catch (error) {
        return { ok: false, code: codeOf(error) };
      }
    },
    { signal, until },
  );
}
