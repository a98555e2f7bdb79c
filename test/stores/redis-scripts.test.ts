import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gcraTake } from "../../src/policies/limiter/gcra.js";
import { freshRecord, grant } from "../../src/policies/limiter/limiter-state.js";
import { DROP, HALT, HOLD, READ, RENEW, SETTLE, TAKE } from "../../src/stores/redis-scripts.js";
import { redisAvailable, sharedRedis, uniquePrefix } from "../support/redis.js";

type Args = (string | number)[];

/** Times are a fake clock's: the scripts read none of their own. */
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);
const TTL = 60_000;
const BIRTH = 7;
const UNCAPPED = 1_000_000;

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

  /** The two keys of a fresh prefix, and the scripts run on them. */
  function store() {
    const prefix = uniquePrefix("scripts");
    const keys = ["state", "leases"].map((name) => `{${prefix}}:${name}`) as [string, string];
    const run = (lua: string, ...args: Args) => client.eval(lua, 2, ...keys, ...args) as Promise<unknown[]>;
    return {
      keys,
      read: (now: number) => run(READ, now, BIRTH, TTL),
      take: (now: number, lease: string, o: { version?: number; max?: number; rate?: number; record?: string; expiry?: number } = {}) =>
        run(TAKE, now, lease, o.expiry ?? now + 10_000, o.version ?? BIRTH, o.max ?? UNCAPPED, o.rate ?? 0, o.record ?? "", BIRTH, TTL),
      settle: (now: number, lease: string, version: number, record: string, stamp = 0) => run(SETTLE, now, lease, version, record, BIRTH, TTL, stamp),
      hold: (now: number, until: number) => run(HOLD, now, until, TTL),
      halt: (now: number, until: number) => run(HALT, now, JSON.stringify({ code: "invalid_api_key", message: "no" }), until, TTL),
      renew: (now: number, expiry: number, ...leases: string[]) => run(RENEW, now, expiry, ...leases),
      drop: (now: number, ...leases: string[]) => run(DROP, now, ...leases),
      field: (name: string) => client.hget(keys[0], name),
    };
  }

  it("reads a new state at its birth version, with no record, and gives it a TTL", async () => {
    const s = store();
    expect(await s.read(T0)).toEqual([BIRTH, "", 0, 0, 0]);
    expect(await client.pttl(s.keys[0])).toBeGreaterThan(TTL - 1_000);
  });

  it("paces takes exactly as gcraTake does on the same inputs: spacing, burst tolerance, the wait's length", async () => {
    const s = store();
    let tat = 0;
    let lease = 0;
    // Rates across the tolerance's cases (several sends at once, one, less than one), a change of
    // rate mid-way, and unlimited between; times uneven, some equal.
    const rates = [1_000, 150, 49, 333.3, 0, 20, 7.5];
    const outcomes: string[] = [];
    for (const [r, rate] of rates.entries()) {
      for (let i = 0; i < 40; i++) {
        const now = T0 + r * 10_000 + Math.floor((i * i * 7) / 5) % 977 + i * 3;
        const expected = gcraTake(tat, now, rate === 0 ? Number.POSITIVE_INFINITY : rate);
        const reply = await s.take(now, `l${lease++}`, { rate });
        if (expected.wait > 0) {
          expect(reply.slice(0, 2), `rate ${rate}, send ${i}`).toEqual(["wait", expected.wait]);
        } else {
          expect(reply[0], `rate ${rate}, send ${i}`).toBe("ok");
          tat = expected.tat;
          expect(Number(await s.field("tat"))).toBe(tat);
        }
        outcomes.push(String(reply[0]));
      }
    }
    // Both answers were met, and more than once: the comparison covered the pace, not only grants.
    expect(outcomes.filter((kind) => kind === "wait").length).toBeGreaterThan(20);
    expect(outcomes.filter((kind) => kind === "ok").length).toBeGreaterThan(20);
  });

  it("lets 20 ms worth go at once at 100/s, then one each 10 ms", async () => {
    const s = store();
    const kinds = async (now: number, count: number) => {
      const out: unknown[] = [];
      for (let i = 0; i < count; i++) out.push((await s.take(now, `l${now}-${i}`, { rate: 100 }))[0]);
      return out;
    };
    expect(await kinds(T0, 3)).toEqual(["ok", "ok", "wait"]);
    expect((await s.take(T0 + 5, "x", { rate: 100 })).slice(0, 2)).toEqual(["wait", 5]);
    expect(await kinds(T0 + 10, 2)).toEqual(["ok", "wait"]);
  });

  it("counts the sends in flight by their leases, and an expired lease stops counting (a killed process's slots heal)", async () => {
    const s = store();
    for (let i = 0; i < 3; i++) expect((await s.take(T0, `dying-${i}`, { max: 3, expiry: T0 + 100 }))[0]).toBe("ok");
    expect(await s.take(T0 + 50, "refused", { max: 3 })).toEqual(["full", 3]);
    // Renewed, one lives on past the others.
    await s.renew(T0 + 60, T0 + 1_000, "dying-0");
    expect(await s.take(T0 + 101, "after", { max: 3 })).toEqual(["ok", 4, BIRTH, 2]);
    expect(await client.zrange(s.keys[1], "0", "-1")).toEqual(["dying-0", "after"]);
    expect((await s.read(T0 + 1_001))[2]).toBe(1);
  });

  it("answers a take on a stale version with the state as it is, and takes nothing", async () => {
    const s = store();
    expect((await s.take(T0, "a"))[0]).toBe("ok");
    expect(await s.settle(T0 + 1, "a", BIRTH, '{"written":1}')).toEqual(["ok", BIRTH + 1, 0, 0]);
    expect((await s.take(T0 + 2, "b", { version: BIRTH + 1 }))[0]).toBe("ok");
    // Decided on the record before "a" was settled: told the newer one, its in-flight count and seq.
    expect(await s.take(T0 + 3, "c", { version: BIRTH, rate: 1 })).toEqual(["conflict", BIRTH + 1, '{"written":1}', 1, 2, 0]);
    expect(await client.zcard(s.keys[1])).toBe(1);
    expect(await s.field("seq")).toBe("2");
    expect(await s.take(T0 + 3, "c", { version: BIRTH + 1 })).toEqual(["ok", 3, BIRTH + 1, 2]);
  });

  it("writes a settle's record only on the version it was made from; a stale one is told the newer record", async () => {
    const s = store();
    await s.take(T0, "a");
    await s.take(T0, "b");
    expect(await s.settle(T0 + 1, "a", BIRTH, '{"by":"a"}')).toEqual(["ok", BIRTH + 1, 1, 0]);
    // "b" settled on the record "a" found: refused, its lease kept until its settle is written.
    expect(await s.settle(T0 + 2, "b", BIRTH, '{"by":"b, stale"}')).toEqual(["conflict", BIRTH + 1, '{"by":"a"}', 1, 2, 0]);
    expect(await s.field("record")).toBe('{"by":"a"}');
    expect(await client.zcard(s.keys[1])).toBe(1);
    expect(await s.settle(T0 + 3, "b", BIRTH + 1, '{"by":"a then b"}')).toEqual(["ok", BIRTH + 2, 0, 0]);
    expect(await s.field("record")).toBe('{"by":"a then b"}');
  });

  it("stamps a settle that took a new count with the sends granted as it is written, not as its writer last read them", async () => {
    const s = store();
    await s.take(T0, "a");
    // Granted by other processes after "a"'s writer last read the state (seq 1): its answer came after they were sent.
    await s.take(T0 + 1, "b");
    await s.take(T0 + 1, "c");
    expect(await s.settle(T0 + 2, "a", BIRTH, '{"countSeq":1}', 1)).toEqual(["ok", BIRTH + 1, 2, 3]);
    expect(await s.field("countSeq")).toBe("3");
    // A record that took no new count leaves the stamp as it is; every reply with the record gives it.
    await s.take(T0 + 3, "d", { version: BIRTH + 1 });
    expect(await s.settle(T0 + 4, "b", BIRTH + 1, '{"countSeq":3}')).toEqual(["ok", BIRTH + 2, 2, 3]);
    expect(await s.read(T0 + 5)).toEqual([BIRTH + 2, '{"countSeq":3}', 2, 4, 3]);
    expect(await s.settle(T0 + 5, "c", BIRTH, "{}", 1)).toEqual(["conflict", BIRTH + 2, '{"countSeq":3}', 2, 4, 3]);
  });

  it("leaves the record alone for a send whose lease is gone (expired, dropped, or a state lost since)", async () => {
    const s = store();
    await s.take(T0, "short", { expiry: T0 + 10 });
    await s.take(T0, "dropped");
    await s.drop(T0 + 1, "dropped");
    expect(await s.settle(T0 + 20, "short", BIRTH, '{"late":1}')).toEqual(["gone", 0]);
    expect(await s.settle(T0 + 20, "dropped", BIRTH, '{"late":1}')).toEqual(["gone", 0]);
    expect(await s.field("record")).toBeNull();
    expect(await s.field("version")).toBe(String(BIRTH));
  });

  it("writes the probe's record, with its grant, as it takes the probe's slot", async () => {
    const s = store();
    const spent = { ...freshRecord(), remaining: 0, remainingSeq: 1, quotaUntil: T0 + 100 };
    await s.take(T0, "last");
    await s.settle(T0 + 1, "last", BIRTH, JSON.stringify(spent));
    const probe = structuredClone(spent);
    const ticket = grant(probe, true, T0 + 100);
    expect(ticket).toMatchObject({ probe: true });
    // One in flight at most: the probe goes alone.
    expect(await s.take(T0 + 100, "probe", { version: BIRTH + 1, max: 1, record: JSON.stringify(probe) })).toEqual(["ok", 2, BIRTH + 2, 1]);
    expect(JSON.parse((await s.field("record")) ?? "")).toEqual({ ...spent, seq: 1, probing: true });
    // Another process, deciding on the record before the probe, finds it changed: it sends no second probe.
    expect((await s.take(T0 + 101, "second", { version: BIRTH + 1, max: 1, record: JSON.stringify(probe) }))[0]).toBe("conflict");
    expect(await s.take(T0 + 101, "second", { version: BIRTH + 2, max: 1 })).toEqual(["full", 1]);
  });

  it("halts until a time, then lets sends go again; a breaker's hold keeps the later time", async () => {
    const s = store();
    await s.halt(T0, T0 + 1_000);
    expect(await s.take(T0 + 10, "a")).toEqual(["halt", JSON.stringify({ code: "invalid_api_key", message: "no" })]);
    expect((await s.take(T0 + 1_000, "b"))[0]).toBe("ok");
    await s.hold(T0, T0 + 2_000);
    await s.hold(T0, T0 + 1_500);
    expect(await s.take(T0 + 1_999, "c")).toEqual(["breaker", T0 + 2_000]);
    expect((await s.take(T0 + 2_000, "d"))[0]).toBe("ok");
  });

  it("starts a lost state at its birth version: a process holding the old version's number finds it changed", async () => {
    const s = store();
    await s.take(T0, "a");
    await s.settle(T0, "a", BIRTH, '{"old":1}');
    await client.del(...s.keys); // a restart or a flush
    const reborn = (lua: string, ...args: Args) => client.eval(lua, 2, ...s.keys, ...args) as Promise<unknown[]>;
    expect(await reborn(TAKE, T0, "b", T0 + 10_000, BIRTH + 1, UNCAPPED, 0, "", 123_456, TTL)).toEqual(["conflict", 123_456, "", 0, 0, 0]);
  });
});
