import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TokenBucket } from "../../src/server/limits.js";
import {
  msToAllow,
  msUntilTokens,
  type RateLimitConfig,
  rateAt,
  rateSegments,
  requestsAllowedBy,
  tokensBetween,
} from "../../src/server/rate-schedule.js";

/** The built-in rate-step scenario's limit. */
const rateStep: RateLimitConfig = {
  ratePerSecond: 200,
  burst: 20,
  steps: [
    { fromMs: 3000, ratePerSecond: 50 },
    { fromMs: 7000, ratePerSecond: 200 },
  ],
};

describe("rate schedule", () => {
  it("cuts the timeline into constant stretches, steps sorted", () => {
    const unsorted = { ...rateStep, steps: [...(rateStep.steps ?? [])].reverse() };
    expect(rateSegments(unsorted)).toEqual([
      { fromMs: 0, toMs: 3000, ratePerSecond: 200 },
      { fromMs: 3000, toMs: 7000, ratePerSecond: 50 },
      { fromMs: 7000, toMs: Infinity, ratePerSecond: 200 },
    ]);
    expect(rateSegments({ ratePerSecond: 5, burst: 1 })).toEqual([
      { fromMs: 0, toMs: Infinity, ratePerSecond: 5 },
    ]);
    // a step at 0 replaces the base rate
    expect(rateSegments({ ratePerSecond: 5, burst: 1, steps: [{ fromMs: 0, ratePerSecond: 7 }] })).toEqual([
      { fromMs: 0, toMs: Infinity, ratePerSecond: 7 },
    ]);
  });

  it("gives the rate in force at a time", () => {
    expect([0, 2999, 3000, 6999, 7000, 1e9].map((t) => rateAt(rateStep, t))).toEqual([
      200, 200, 50, 50, 200, 200,
    ]);
  });

  it("integrates the rate across step boundaries", () => {
    const segments = rateSegments(rateStep);
    expect(tokensBetween(segments, 0, 3000)).toBeCloseTo(600);
    expect(tokensBetween(segments, 2000, 4000)).toBeCloseTo(200 + 50); // 1 s at 200/s, 1 s at 50/s
    expect(tokensBetween(segments, 0, 8000)).toBeCloseTo(600 + 200 + 200);
    expect(msUntilTokens(segments, 2900, 25)).toBeCloseTo(100 + 100); // 20 by 3000, 5 more at 50/s
    expect(msUntilTokens(segments, 6900, 15)).toBeCloseTo(100 + 50); // 5 by 7000, 10 more at 200/s
  });

  it("counts the requests the limit allows by a time, and inverts it", () => {
    expect(requestsAllowedBy(rateStep, 0)).toBe(20);
    expect(requestsAllowedBy(rateStep, 3000)).toBe(620);
    expect(requestsAllowedBy(rateStep, 7000)).toBe(820);
    expect(msToAllow(rateStep, 20)).toBe(0);
    expect(msToAllow(rateStep, 620)).toBeCloseTo(3000);
    expect(msToAllow(rateStep, 821)).toBeCloseTo(7005);
    // 2,400 jobs: 820 by 7 s, then 1,580 at 200/s
    expect(msToAllow(rateStep, 2400)).toBeCloseTo(14_900);
    expect(msToAllow({ ratePerSecond: 200, burst: 20 }, 2000)).toBeCloseTo(9900);
  });

  it("msToAllow is the first time requestsAllowedBy reaches a count", () => {
    const config = fc.record({
      ratePerSecond: fc.integer({ min: 1, max: 1000 }),
      burst: fc.integer({ min: 1, max: 50 }),
      steps: fc
        .uniqueArray(fc.integer({ min: 1, max: 20_000 }), { maxLength: 4 })
        .chain((times) =>
          fc.tuple(...times.sort((a, b) => a - b).map((fromMs) =>
            fc.record({ fromMs: fc.constant(fromMs), ratePerSecond: fc.integer({ min: 1, max: 1000 }) }),
          )),
        ),
    });
    fc.assert(
      fc.property(config, fc.integer({ min: 1, max: 5000 }), (c, count) => {
        const t = msToAllow(c, count);
        expect(requestsAllowedBy(c, t)).toBeGreaterThanOrEqual(count);
        if (t > 0.01) expect(requestsAllowedBy(c, t - 0.01)).toBeLessThan(count);
      }),
    );
  });
});

describe("TokenBucket with steps", () => {
  it("waits at the new rate for the part of the gap after a step up", () => {
    // 100/s until 5 ms, then 10/s: after 2 ms, 0.2 tokens; 0.3 more by 5 ms, then 0.5 at 10/s
    const bucket = new TokenBucket({ ratePerSecond: 100, burst: 1, steps: [{ fromMs: 5, ratePerSecond: 10 }] }, 0);
    expect(bucket.take(0)).toBe(0);
    expect(bucket.take(2)).toBeCloseTo(3 + 50); // one rate for the whole gap would say 8
    expect(bucket.take(54)).toBeCloseTo(1);
    expect(bucket.take(55.001)).toBe(0);
  });

  it("refills by the integral across a step down, counted from the start time", () => {
    const start = 1_000_000;
    const bucket = new TokenBucket(
      { ratePerSecond: 1000, burst: 100, steps: [{ fromMs: 10, ratePerSecond: 100 }] },
      start,
    );
    for (let i = 0; i < 100; i++) expect(bucket.take(start)).toBe(0);
    // 10 ms at 1000/s and 20 ms at 100/s: 12 tokens, where 100/s throughout would give 3
    for (let i = 0; i < 12; i++) expect(bucket.take(start + 30)).toBe(0);
    expect(bucket.take(start + 30)).toBeCloseTo(10);
  });

  it("ignores a clock that goes back", () => {
    const bucket = new TokenBucket({ ratePerSecond: 1000, burst: 1 }, 100);
    expect(bucket.take(100)).toBe(0);
    expect(bucket.take(50)).toBeCloseTo(1);
    expect(bucket.take(101)).toBe(0);
  });
});
