import { describe, expect, it } from "vitest";
import { FleetShare } from "../../../src/policies/limiter/fleet-share.js";

describe("FleetShare", () => {
  it("is all until two sends were granted", () => {
    const share = new FleetShare();
    expect(share.share()).toBe(1);
    share.granted(0, 40);
    expect(share.share()).toBe(1);
  });

  it("is the part of the fleet's sends this process was granted", () => {
    const share = new FleetShare();
    for (let seq = 1; seq <= 30; seq += 3) share.granted(seq, seq); // every third of the fleet's
    expect(share.share()).toBeCloseTo(1 / 3, 5);
  });

  it("reads the last two windows of two seconds: an old share fades", () => {
    const share = new FleetShare();
    let seq = 0;
    for (let at = 0; at < 4_000; at += 10) share.granted(at, (seq += 4)); // a quarter
    for (let at = 4_000; at < 8_000; at += 10) share.granted(at, (seq += 2)); // then a half
    expect(share.share()).toBeCloseTo(1 / 2, 2);
  });

  it("starts anew when the fleet's count does (Redis lost its state)", () => {
    const share = new FleetShare();
    for (let seq = 10; seq <= 100; seq += 10) share.granted(seq, seq); // a tenth
    share.granted(200, 1);
    share.granted(201, 2);
    expect(share.share()).toBe(1);
  });
});
