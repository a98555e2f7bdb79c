import { describe, expect, it } from "vitest";
import {
  admit,
  freshRecord,
  grant,
  type LimiterChange,
  type LimiterRecord,
  type Observation,
  paceOf,
  settle,
  snapshotOf,
  type Ticket,
} from "../../../src/policies/limiter/limiter-state.js";

const MIN_RATE = 1;

/** Takes a send slot at `now` with `inFlight` sends out, or fails the test. */
function take(record: LimiterRecord, now: number, inFlight = 0): Ticket {
  const admitted = admit(record, now, inFlight);
  if ("reason" in admitted) throw new Error(`refused: ${admitted.reason}`);
  return grant(record, admitted.probe, now);
}

const accepted = (remaining?: number): Observation => ({ effect: "accepted", remaining, retryAt: undefined });
const quotaOut = (retryAt: number): Observation => ({ effect: "quota_out", remaining: 0, retryAt });
const slowDown = (retryAt?: number): Observation => ({ effect: "slow_down", remaining: undefined, retryAt });

describe("X-Renders-Remaining", () => {
  it("counts sends in flight against the renders left", () => {
    const record = freshRecord();
    expect(admit(record, 0, 100)).toEqual({ probe: false }); // no count yet: the concurrency cap alone
    settle(record, take(record, 0), accepted(2), 1, MIN_RATE);
    expect(admit(record, 2, 1)).toEqual({ probe: false });
    expect(admit(record, 2, 2)).toEqual({ reason: "quota", until: undefined }); // until a send finishes
    expect(snapshotOf(record, 2, 1, 4)).toMatchObject({ remaining: 1, inFlight: 1 });
  });

  it("never lets an older response's higher count refill", () => {
    const record = freshRecord();
    const older = take(record, 0);
    const newer = take(record, 0, 1);
    settle(record, newer, accepted(0), 1, MIN_RATE);
    settle(record, older, accepted(50), 2, MIN_RATE);
    expect(record.remaining).toBe(0);
  });

  it("takes an older response's lower count, whatever order the answers come in", () => {
    const record = freshRecord();
    settle(record, take(record, 0), accepted(30), 1, MIN_RATE);
    const older = take(record, 2);
    const newer = take(record, 2, 1);
    settle(record, newer, accepted(20), 3, MIN_RATE);
    settle(record, older, accepted(12), 4, MIN_RATE); // rendered later: fewer are left
    expect(record.remaining).toBe(12);
  });

  it("takes a newer higher count as a refill, and no count sent before it", () => {
    const record = freshRecord();
    settle(record, take(record, 0), accepted(3), 1, MIN_RATE);
    const before = take(record, 2);
    const refilled = take(record, 2, 1);
    settle(record, refilled, accepted(500), 3, MIN_RATE);
    settle(record, before, accepted(2), 4, MIN_RATE); // maybe the last period's count
    expect(record.remaining).toBe(500);
  });

  it("takes no higher count from a send granted before the count in force came: its answer may be the older", () => {
    const record = freshRecord();
    settle(record, take(record, 0), accepted(10), 1, MIN_RATE);
    const renderedLast = take(record, 2);
    const renderedFirst = take(record, 2, 1);
    // Granted in one order, rendered in the other, and their answers recorded in the order granted
    // (in a fleet, by two processes): the later grant's answer is the older, and says more is left.
    settle(record, renderedLast, accepted(8), 3, MIN_RATE);
    settle(record, renderedFirst, accepted(9), 4, MIN_RATE);
    expect(record.remaining).toBe(8);
    // A send granted after the count came says what is left since: more is a refill.
    settle(record, take(record, 5), accepted(300), 6, MIN_RATE);
    expect(record.remaining).toBe(300);
  });

  it("counts one render fewer for a success with no count", () => {
    const record = freshRecord();
    settle(record, take(record, 0), accepted(10), 1, MIN_RATE);
    settle(record, take(record, 2), accepted(undefined), 3, MIN_RATE);
    expect(record.remaining).toBe(9);
  });
});

describe("a spent quota", () => {
  it("holds every send until Retry-After, then lets one probe go alone; a refill lets all go again", () => {
    const record = freshRecord();
    settle(record, take(record, 0), quotaOut(60_000), 1, MIN_RATE);
    expect(admit(record, 30_000, 0)).toEqual({ reason: "quota", until: 60_000 });
    const probe = take(record, 60_000);
    expect(probe.probe).toBe(true);
    expect(admit(record, 60_001, 1)).toEqual({ reason: "quota", until: undefined }); // one probe at a time
    expect(admit(record, 60_001, 0)).toEqual({ reason: "quota", until: undefined }); // even with its slot back
    settle(record, probe, accepted(100), 60_010, MIN_RATE);
    expect(take(record, 60_011).probe).toBe(false);
    expect(take(record, 60_011, 1).probe).toBe(false);
  });

  it("after a probe renders with no count, sends more than one at a time again", () => {
    const record = freshRecord();
    settle(record, take(record, 0), accepted(0), 1, MIN_RATE);
    const probe = take(record, 2);
    expect(probe.probe).toBe(true);
    expect(admit(record, 2, 1)).toMatchObject({ reason: "quota" });
    settle(record, probe, accepted(undefined), 3, MIN_RATE);
    take(record, 4);
    take(record, 4, 1);
    expect(snapshotOf(record, 4, 2, 4).remaining).toBeUndefined();
  });

  it("never lets an old quota_exceeded override a newer refill", () => {
    const record = freshRecord();
    const older = take(record, 0);
    const newer = take(record, 0, 1);
    settle(record, newer, accepted(1_000), 10, MIN_RATE);
    expect(settle(record, older, quotaOut(3_600_000), 20, MIN_RATE)).toEqual([]);
    expect(admit(record, 30, 0)).toEqual({ probe: false });
  });

  it("takes an older send's quota_exceeded of the same period: the quota is spent, though a newer answer counted some left", () => {
    const record = freshRecord();
    settle(record, take(record, 0), accepted(30), 1, MIN_RATE);
    const older = take(record, 2);
    const newer = take(record, 2, 1);
    settle(record, newer, accepted(3), 3, MIN_RATE);
    expect(settle(record, older, quotaOut(3_600_000), 4, MIN_RATE)).toEqual([{ kind: "quota_exhausted", until: 3_600_000 }]);
    expect(admit(record, 5, 0)).toEqual({ reason: "quota", until: 3_600_000 });
  });
});

describe("rate_limited", () => {
  it("teaches the send rate: a burst of 429s is a rate change, and the pace follows it", () => {
    const record = freshRecord();
    expect(paceOf(record)).toBe(Number.POSITIVE_INFINITY);
    const tickets = Array.from({ length: 100 }, (_, i) => take(record, 0, i));
    const changes = tickets.flatMap((ticket, i) => settle(record, ticket, slowDown(1_000), 10 + i, MIN_RATE));
    expect(changes).toEqual([expect.objectContaining({ kind: "rate" })]);
    expect(paceOf(record)).toBeLessThan(Number.POSITIVE_INFINITY);
    expect(snapshotOf(record, 200, 0, 4).sendRate).toBe(paceOf(record));
  });

  it("pauses every send until Retry-After when 429s persist at the lowest rate", () => {
    const record = freshRecord();
    const minRate = 1_000; // the first cut reaches it: the next phase of 429s is persistent
    const changes: LimiterChange[] = [];
    for (let i = 0; i < 2_000 && !changes.some((c) => c.kind === "paused"); i++) {
      changes.push(...settle(record, take(record, i), slowDown(i + 5_000), i + 1, minRate));
    }
    const paused = changes.find((c) => c.kind === "paused");
    expect(paused).toBeDefined();
    const until = (paused as { until: number }).until;
    expect(admit(record, until - 1, 0)).toEqual({ reason: "pause", until });
    expect(snapshotOf(record, until - 1, 0, 4).pausedUntil).toBe(until);
    expect(admit(record, until, 0)).toEqual({ probe: false });
  });
});
