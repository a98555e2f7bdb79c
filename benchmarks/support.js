// Shared by every benchmark: the run's size (full or smoke), where outputs go, number formatting.
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

/** True for the smoke run (`BENCH_SMOKE=1`, set by `run.js --smoke`): few jobs, short scenarios. */
export const smoke = process.env.BENCH_SMOKE === "1";

/** `full` in a full run, `short` in the smoke run. */
export const sized = (full, short) => (smoke ? short : full);

/** Where charts (under `charts/`) and RESULTS.md go: `BENCH_OUT` (set by `run.js`), else benchmarks/. */
export const outputDir = process.env.BENCH_OUT ?? fileURLToPath(new URL(".", import.meta.url));

export const fmt = (n, digits = 2) => Number(n).toFixed(digits);

/**
 * Ends the benchmark's process once its last line is printed: a contender stopped in the middle of
 * a wait can leave a timer behind that nothing can clear (undici's RetryAgent sleeps up to 30 s, and
 * its request's abort does not end that sleep), which would keep the process alive for nothing.
 */
export const finish = () => process.exit();

/** Calls `fn` `count` times from `inFlight` workers; returns µs per call (wall time / calls). */
export async function usPerCall(fn, count, inFlight) {
  let started = 0;
  const worker = async () => {
    while (started < count) {
      started++;
      await fn();
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  return ((performance.now() - t0) / count) * 1000;
}
