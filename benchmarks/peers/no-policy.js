// Contender: no policy at all: one undici.request per job; any answer but a 2xx fails the job.
import { sendOnce } from "./http.js";
import { codeOf, runPool } from "./pool.js";

export async function renderJobs(run) {
  const { baseUrl, apiKey, signal } = run;
  return runPool(run, async (job) => {
    try {
      await sendOnce({ baseUrl, apiKey, job, signal });
      return { ok: true };
    } catch (error) {
      return { ok: false, code: codeOf(error) };
    }
  });
}
