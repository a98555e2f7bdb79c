import { describe, expect, it } from "vitest";
import { SendRate } from "../../src/policies/send-rate.js";

const settings = { decrease: 0.97, increase: 0.01, minRate: 1 };

/** Sends `count` at `everyMs` from `from`, all accepted; returns the time after. */
function sendAccepted(rate: SendRate, from: number, count: number, everyMs: number): number {
  let now = from;
  for (let i = 0; i < count; i++, now += everyMs) {
    expect(rate.take(now)).toBe(0);
    rate.accept(now, now);
  }
  return now;
}

describe("SendRate", () => {
  it("is unlimited until the first rate_limited, which halves the rate that was sent", () => {
    const rate = new SendRate(settings);
    const now = sendAccepted(rate, 0, 100, 2); // 500 per second
    expect(rate.rate).toBe(Number.POSITIVE_INFINITY);
    expect(rate.cut(now, now - 1)).toBe(true);
    expect(rate.rate).toBeCloseTo(250, 0);
  });

  it("ignores a 429 to a send made before the last cut, and measures a cut 50 ms before the next", () => {
    const rate = new SendRate(settings);
    sendAccepted(rate, 0, 100, 2);
    rate.cut(200, 199);
    expect(rate.cut(201, 199)).toBe(false); // sent before the cut
    expect(rate.cut(240, 230)).toBe(false); // within 50 ms of it
    expect(rate.rate).toBeCloseTo(250, 0);
  });

  it("after a cut, drops to the goodput measured since it, a little below", () => {
    const rate = new SendRate(settings);
    sendAccepted(rate, 0, 100, 2);
    rate.cut(200, 199);
    // The service accepts 200 per second: 20 accepted in the next 100 ms.
    for (let i = 0; i < 20; i++) rate.accept(200 + i * 5, 200 + i * 5);
    expect(rate.cut(300, 299)).toBe(true);
    expect(rate.rate).toBeCloseTo(200 * 0.97, 0);
  });

  it("spaces sends at the rate", () => {
    const rate = new SendRate(settings);
    sendAccepted(rate, 0, 50, 10); // 100 per second
    rate.cut(500, 499); // to 50 per second: one each 20 ms
    expect(rate.take(500)).toBe(20);
    expect(rate.take(520)).toBe(0);
    expect(rate.take(521)).toBe(19);
  });

  it("climbs 1 % each 100 ms without a 429, faster once a second has passed", () => {
    const rate = new SendRate(settings);
    sendAccepted(rate, 0, 50, 10);
    rate.cut(500, 499);
    const start = rate.rate;
    for (let t = 600; t <= 1_400; t += 100) rate.accept(t, t);
    expect(rate.rate).toBeCloseTo(start * 1.01 ** 9, 5);
    for (let t = 1_500; t <= 2_400; t += 100) rate.accept(t, t);
    expect(rate.rate).toBeCloseTo(start * 1.01 ** 9 * 1.02 ** 10, 5);
  });

  it("never goes below minRate", () => {
    const rate = new SendRate({ ...settings, minRate: 5 });
    rate.take(0);
    rate.cut(1, 0);
    for (let t = 100; t < 2_000; t += 60) rate.cut(t, t);
    expect(rate.rate).toBe(5);
  });
});
