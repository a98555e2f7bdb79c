// Shared by every benchmark: the run's size (full or smoke), where outputs go, number formatting.
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { GCProfiler } from "node:v8";

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

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * µs per call of each of `fns` over `rounds` rounds after a warm-up, each round timing them all back
 * to back, each round starting one further along (with two: in turn the first first, then the
 * second), so drift and a noisy neighbour hit every side alike; `between` runs (and is awaited),
 * untimed, after each timing. Each side's median and fastest round, in the order of `fns`.
 */
export async function alternate(fns, { count, inFlight, rounds, between = () => {} }) {
  for (const fn of fns) await usPerCall(fn, count / 2, inFlight);
  await between();
  const times = fns.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < fns.length; k++) {
      const side = (round + k) % fns.length;
      times[side].push(await usPerCall(fns[side], count, inFlight));
      await between();
    }
  }
  return times.map((t) => ({ median: median(t), best: Math.min(...t) }));
}

/**
 * Bytes allocated on the JS heap per call: the heap's growth over the run plus what every GC in it
 * freed (V8's used heap size before and after each, from GCProfiler), so GCs do not hide allocations.
 */
export async function bytesPerCall(fn, count, inFlight) {
  await usPerCall(fn, count / 2, inFlight); // warm up: no lazy compilation or first-time caches counted
  globalThis.gc?.();
  const profiler = new GCProfiler();
  profiler.start();
  const before = process.memoryUsage().heapUsed;
  await usPerCall(fn, count, inFlight);
  const after = process.memoryUsage().heapUsed;
  const { statistics } = profiler.stop();
  const freed = statistics.reduce(
    (sum, gc) => sum + gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize,
    0,
  );
  return (after - before + freed) / count;
}
