import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ACQUIRE, DROP, HALT, RELEASE } from "../../../src/policies/limiter/redis-scripts.js";
import { redisAvailable, sharedRedis, uniquePrefix } from "../../support/redis.js";

type Args = (string | number)[];

describe.skipIf(!redisAvailable)("the Redis store's scripts", () => {
  let redis: { url: string; stop(): Promise<void> };
  let client: Redis;
  beforeAll(async () => {
    redis = await sharedRedis();
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    client?.disconnect();
    await redis?.stop();
  });

  /** The three keys of a fresh prefix, and the scripts run on them. */
  function store() {
    const prefix = uniquePrefix("scripts");
    const keys = ["state", "leases", "answers"].map((name) => `{${prefix}}:${name}`);
    const run = (lua: string, ...args: Args) => client.eval(lua, 3, ...keys, ...args) as Promise<unknown[]>;
    const ttl = 60_000;
    return {
      keys,
      acquire: (now: number, lease: string, rate = 0, process = "p1") => run(ACQUIRE, now, lease, now + 10_000, rate, ttl, `${now}-0`, process),
      release: (now: number, lease: string, seq: number, effect: string, remaining: number | "", retryAt: number | "") =>
        run(RELEASE, now, lease, seq, 0, effect, remaining, retryAt, now, 0, ttl, `${now}-0`),
      halt: (now: number, until: number) => run(HALT, JSON.stringify({ code: "invalid_api_key", message: "no" }), until, now, ttl),
      drop: (...leases: string[]) => run(DROP, ...leases),
    };
  }

  it("ignores what a send granted before Redis lost its state says of the quota", async () => {
    const s = store();
    const now = Date.now();
    for (let i = 1; i <= 5; i++) expect((await s.acquire(now, `old-${i}`))[0]).toBe("ok");
    await client.del(s.keys[0]!); // a restart or a flush: seq starts again
    expect((await s.acquire(now, "new-1")).slice(0, 2)).toEqual(["ok", 1]);
    // The old fifth send's count would make every newer send's count look old.
    await s.release(now, "old-5", 5, "accepted", 900, "");
    expect(await client.hget(s.keys[0]!, "remainingSeq")).toBeNull();
    await s.release(now, "new-1", 1, "accepted", 0, now + 60_000);
    expect(await client.hmget(s.keys[0]!, "remaining", "remainingSeq")).toEqual(["0", "1"]);
    expect((await s.acquire(now + 1, "new-2"))[0]).toBe("quota");
  });

  it("takes a newer send's higher count for a stale one, unless it is higher than any since the last refill", async () => {
    const s = store();
    const now = Date.now();
    const remaining = () => client.hget(s.keys[0]!, "remaining");
    for (let i = 1; i <= 4; i++) await s.acquire(now, `l${i}`);
    await s.release(now, "l1", 1, "accepted", 10, "");
    await s.release(now, "l2", 2, "accepted", 6, "");
    expect(await remaining()).toBe("6");
    // Sent by another process, granted later but rendered sooner: its count is older than 6.
    await s.release(now, "l3", 3, "accepted", 9, "");
    expect(await remaining()).toBe("6");
    // Higher than any count since the last refill: a refill.
    await s.release(now, "l4", 4, "accepted", 500, "");
    expect(await remaining()).toBe("500");
  });

  it("takes an older send's lower count of the same period: the count only falls until a refill, whatever order the answers came in", async () => {
    const s = store();
    const now = Date.now();
    const remaining = () => client.hget(s.keys[0]!, "remaining");
    for (let i = 1; i <= 5; i++) await s.acquire(now, `l${i}`);
    await s.release(now, "l1", 1, "accepted", 20, ""); // the period's first count
    await s.release(now, "l3", 3, "accepted", 12, "");
    // Granted before l3 but rendered after it (its process was slower to send it): the service's newer word.
    await s.release(now, "l2", 2, "accepted", 7, "");
    expect(await remaining()).toBe("7");
    await s.release(now, "l5", 5, "accepted", 500, ""); // a refill
    // Granted before the refill's send: its count may be the last period's, so it only counts its render.
    await s.release(now, "l4", 4, "accepted", 3, "");
    expect(await remaining()).toBe("499");
  });

  it("takes an older send's quota_exceeded of the same period, not one from before its refill", async () => {
    const s = store();
    const now = Date.now();
    const state = () => client.hmget(s.keys[0]!, "remaining", "quotaUntil");
    for (let i = 1; i <= 5; i++) await s.acquire(now, `l${i}`);
    await s.release(now, "l1", 1, "accepted", 20, ""); // the period's first count
    await s.release(now, "l3", 3, "accepted", 12, "");
    expect((await s.release(now, "l2", 2, "quota_out", 0, now + 60_000))[0]).toBe(1);
    expect(await state()).toEqual(["0", String(now + 60_000)]);
    await s.release(now, "l5", 5, "accepted", 500, ""); // a refill
    expect((await s.release(now, "l4", 4, "quota_out", 0, now + 60_000))[0]).toBe(0);
    expect((await state())[0]).toBe("500");
  });

  it("paces every process at the fleet's rate: the lowest asked lately, which the process that set it moves", async () => {
    const s = store();
    const now = Date.now();
    let lease = 0;
    /** The kinds of `count` acquires by `process`, asking at `rate`, at time `at`. */
    const kinds = async (at: number, count: number, rate: number, process: string) => {
      const out: unknown[] = [];
      for (let i = 0; i < count; i++) out.push((await s.acquire(at, `lease-${lease++}`, rate, process))[0]);
      return out;
    };
    expect(await kinds(now, 3, 100, "p1")).toEqual(["ok", "ok", "rate"]); // 20 ms worth at once
    // A process that knows no limit, or a higher one, keeps the pace: it does not send past it.
    expect(await kinds(now + 1, 1, 0, "p2")).toEqual(["rate"]);
    expect(await kinds(now + 1, 1, 1_000, "p2")).toEqual(["rate"]);
    expect(await kinds(now + 10, 2, 0, "p2")).toEqual(["ok", "rate"]);
    // The process that set it raises it, for every process.
    expect(await kinds(now + 20, 1, 1_000, "p1")).toEqual(["ok"]);
    expect(await kinds(now + 20, 5, 0, "p2")).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    // A process asking lower lowers it; a higher one cannot raise it until it is a second old.
    expect(await kinds(now + 100, 2, 50, "p3")).toEqual(["ok", "rate"]);
    expect(await kinds(now + 101, 1, 1_000, "p1")).toEqual(["rate"]);
    expect(await kinds(now + 1_100, 5, 1_000, "p1")).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    // Unlimited, once the process that set it asks at no rate.
    expect(await kinds(now + 1_101, 1, 0, "p1")).toEqual(["ok"]);
    expect((await kinds(now + 1_101, 50, 0, "p2")).every((kind) => kind === "ok")).toBe(true);
  });

  it("halts until a time, then lets sends go again", async () => {
    const s = store();
    const now = Date.now();
    await s.halt(now, now + 1_000);
    expect((await s.acquire(now + 10, "a"))[0]).toBe("halt");
    expect((await s.acquire(now + 1_000, "b"))[0]).toBe("ok");
  });

  it("gives back dropped leases, and the probe with them", async () => {
    const s = store();
    const now = Date.now();
    expect((await s.acquire(now, "a"))[0]).toBe("ok");
    await s.release(now, "a", 1, "accepted", 0, ""); // spent, with no Retry-After: one probe may go
    expect((await s.acquire(now + 1, "probe"))[0]).toBe("probe");
    expect((await s.acquire(now + 2, "next"))[0]).toBe("quota");
    await s.drop("probe");
    expect(await client.zcard(s.keys[1]!)).toBe(0);
    expect((await s.acquire(now + 3, "again"))[0]).toBe("probe");
  });
});
