// Contender: cockatiel 3 wired as its README does, wrap(retry, circuitBreaker), around
// undici.request. The retry resends 408, 429, 500, network errors and calls the open circuit
// refused (BrokenCircuitError), 5 retries with ExponentialBackoff's defaults (128 ms first,
// decorrelated jitter, 30 s cap; cockatiel does not read Retry-After). The breaker,
// ConsecutiveBreaker(5) and half-open after 10 s, counts 500s and network errors; other answers
// pass through it uncounted.
import { BrokenCircuitError, ConsecutiveBreaker, circuitBreaker, ExponentialBackoff, handleWhen, retry, wrap } from "cockatiel";
import { HttpError, sendOnce } from "./http.js";
import { codeOf, runPool } from "./pool.js";

const isServiceFault = (error) => (error instanceof HttpError ? error.status === 500 : !(error instanceof BrokenCircuitError));
const isRetryable = (error) => error instanceof BrokenCircuitError || !(error instanceof HttpError) || [408, 429, 500].includes(error.status);

export async function renderJobs(run) {
  const { baseUrl, apiKey } = run;
  const policy = wrap(
    retry(handleWhen(isRetryable), { maxAttempts: 5, backoff: new ExponentialBackoff() }),
    circuitBreaker(handleWhen(isServiceFault), { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
  );
  return runPool(run, async (job) => {
    try {
      await policy.execute(({ signal }) => sendOnce({ baseUrl, apiKey, job, signal }), run.signal);
      return { ok: true };
    } catch (error) {
      return { ok: false, code: error instanceof BrokenCircuitError ? "circuit_open" : codeOf(error) };
    }
  });
}
