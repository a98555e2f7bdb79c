import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DURATION_BUCKETS_MS, Durations } from "../../src/util/durations.js";

/** The bucket bounds around `ms`: the largest bound below it and the smallest at or above it. */
function bucketAround(ms: number): [number, number] {
  const upper = DURATION_BUCKETS_MS.find((bound) => ms <= bound) ?? Number.POSITIVE_INFINITY;
  const lower = [...DURATION_BUCKETS_MS].reverse().find((bound) => bound < ms) ?? 0;
  return [lower, upper];
}

describe("Durations", () => {
  it("has no quantile and empty buckets before the first duration", () => {
    const summary = new Durations().summary();
    expect(summary).toMatchObject({ count: 0, totalMs: 0, maxMs: undefined, p50Ms: undefined, p95Ms: undefined, p99Ms: undefined });
    expect(summary.buckets.every(({ count }) => count === 0)).toBe(true);
    expect(summary.buckets.at(-1)?.leMs).toBe(Number.POSITIVE_INFINITY);
  });

  it("over any durations: counts and sums exactly, buckets cumulative, each quantile in the bucket of the true one and never above the max", () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 900_000, noNaN: true }), { minLength: 1, maxLength: 300 }), (durations) => {
        const meter = new Durations();
        for (const ms of durations) meter.record(ms);
        const summary = meter.summary();
        const sorted = [...durations].sort((a, b) => a - b);
        expect(summary.count).toBe(durations.length);
        expect(summary.totalMs).toBeCloseTo(durations.reduce((sum, ms) => sum + ms, 0), 6);
        expect(summary.maxMs).toBe(sorted.at(-1));
        for (const { leMs, count } of summary.buckets) expect(count).toBe(durations.filter((ms) => ms <= leMs).length);
        for (const [q, estimate] of [[0.5, summary.p50Ms], [0.95, summary.p95Ms], [0.99, summary.p99Ms]] as const) {
          const truth = sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] as number;
          const [lower, upper] = bucketAround(truth);
          expect(estimate).toBeGreaterThanOrEqual(lower);
          expect(estimate).toBeLessThanOrEqual(Math.min(upper, summary.maxMs as number));
        }
        expect(summary.p50Ms as number).toBeLessThanOrEqual(summary.p95Ms as number);
        expect(summary.p95Ms as number).toBeLessThanOrEqual(summary.p99Ms as number);
      }),
      { numRuns: 300 },
    );
  });
});
