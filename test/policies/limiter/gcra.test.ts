import { describe, expect, it } from "vitest";
import { BURST_MS, gcraTake } from "../../../src/policies/limiter/gcra.js";

/** Sends let go at each millisecond of `ms`, asking as often as a send is granted. */
function grants(rate: number, ms: number): number[] {
  let tat = 0;
  const counts: number[] = [];
  for (let now = 0; now < ms; now++) {
    let count = 0;
    for (let take = gcraTake(tat, now, rate); take.wait === 0; take = gcraTake(tat, now, rate)) {
      tat = take.tat;
      count++;
    }
    counts.push(count);
  }
  return counts;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

describe("gcraTake", () => {
  it("spaces sends at the rate: one per interval, never two at once when an interval is 20 ms or more", () => {
    const counts = grants(50, 10_000);
    expect(sum(counts)).toBe(500);
    expect(Math.max(...counts)).toBe(1);
    const at = counts.flatMap((count, ms) => (count > 0 ? [ms] : []));
    expect(new Set(at.slice(1).map((ms, i) => ms - at[i]!))).toEqual(new Set([20]));
  });

  it("lets 20 ms worth go at once at a higher rate, and no more however long it was idle", () => {
    const counts = grants(1_000, 1_000);
    expect(counts[0]).toBe(BURST_MS);
    expect(sum(counts)).toBeLessThanOrEqual(1_000 + BURST_MS);
    expect(sum(counts)).toBeGreaterThanOrEqual(1_000);
    // After an idle minute, the same 20 ms worth, not a minute's.
    let tat = gcraTake(0, 0, 1_000).tat;
    let burst = 0;
    for (let take = gcraTake(tat, 60_000, 1_000); take.wait === 0; take = gcraTake(tat, 60_000, 1_000)) {
      tat = take.tat;
      burst++;
    }
    expect(burst).toBe(BURST_MS);
  });

  it("says how long to wait, and the send goes when that time comes", () => {
    const first = gcraTake(0, 0, 10);
    expect(first.wait).toBe(0);
    const refused = gcraTake(first.tat, 1, 10);
    expect(refused).toEqual({ wait: 99, tat: first.tat });
    expect(gcraTake(first.tat, 1 + refused.wait - 1, 10).wait).toBeGreaterThan(0);
    expect(gcraTake(first.tat, 1 + refused.wait, 10).wait).toBe(0);
  });

  it("lets everything go when unlimited, and keeps no debt from it", () => {
    for (let i = 0; i < 1_000; i++) expect(gcraTake(0, 5, Number.POSITIVE_INFINITY)).toEqual({ wait: 0, tat: 5 });
    expect(gcraTake(5, 5, 10).wait).toBe(0); // a limit learned after: the first send goes at once
  });
});
