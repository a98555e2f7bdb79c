import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createRenderClient, type RenderClient } from "../../src/client.js";
import type { RenderError } from "../../src/core/errors.js";
import type { LimiterSnapshot, Observation, Ticket } from "../../src/policies/limiter/limiter-state.js";
import { limiterDefaults } from "../../src/policies/limiter/limiter.js";
import { memoryLimiterStore } from "../../src/policies/limiter/memory-store.js";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { redisStore } from "../../src/stores/redis-store.js";
import { systemClock } from "../../src/util/clock.js";
import { silentLogger } from "../../src/util/logger.js";
import { FakeClock } from "../support/fake-clock.js";
import { capturedLogger } from "../support/logger.js";
import { freePort, redisAvailable, redisServerPath, sharedRedis, startRedis, uniquePrefix } from "../support/redis.js";

const hour = 60 * 60 * 1000;
const bodySha = (html: string) => createHash("sha256").update(JSON.stringify({ html })).digest("hex");

/** Renders `count` documents through `client`, `inFlight` at a time; the codes of the failures, in order. */
async function renderSome(client: RenderClient, count: number, tag: string, inFlight = 4): Promise<{ rendered: number; failed: string[] }> {
  let rendered = 0;
  const failed: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      try {
        await client.render({ html: `<p>${tag} ${i}</p>` });
        rendered++;
      } catch (error) {
        failed.push((error as RenderError).code);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { rendered, failed };
}

describe("redisStore options", () => {
  it("needs a url or a client, not both, and checks each option", () => {
    expect(() => redisStore({})).toThrow(/either `url`/);
    expect(() => redisStore({ url: "redis://127.0.0.1:1", client: {} as Redis })).toThrow(/either `url`/);
    expect(() => redisStore({ url: "http://127.0.0.1:6379" })).toThrow(/redis:\/\//);
    expect(() => redisStore({ url: "redis://127.0.0.1:1", keyPrefix: "" })).toThrow(/keyPrefix/);
    expect(() => redisStore({ url: "redis://127.0.0.1:1", leaseMs: 0 })).toThrow(/leaseMs/);
    expect(() => redisStore({ url: "redis://127.0.0.1:1", timeoutMs: Number.NaN })).toThrow(/timeoutMs/);
    expect(() => redisStore({ url: "redis://127.0.0.1:1", timeoutMs: 2 ** 31 })).toThrow(/timeoutMs/); // one timer's most
    expect(() => redisStore({ url: "redis://127.0.0.1:1", leaseMs: Number.POSITIVE_INFINITY })).toThrow(/leaseMs/);
    expect(() => redisStore({ url: "redis://127.0.0.1:1", timeoutMS: 5 } as never)).toThrow(/did you mean `redisStore.timeoutMs`/);
    expect(() => createRenderClient({ baseUrl: "http://127.0.0.1:1", apiKey: "k", limiter: { store: {} as never } })).toThrow(/limiter.store/);
    expect(() => redisStore({ client: { get: () => "" } as never })).toThrow(/ioredis instance/);
  });

  it("never puts a URL's password in its message", () => {
    expect(() => redisStore({ url: "http://:hunter2@127.0.0.1:6379" })).toThrow(/got "http:\/\/:\*\*\*@127\.0\.0\.1:6379\/"/);
    expect(() => redisStore({ url: "acct:0123456789abcdef0123" })).toThrow("got a string of 25 characters");
    expect(() => redisStore({ url: "http://:hunter2@127.0.0.1:6379" })).not.toThrow(/hunter2/);
  });
});

describe.skipIf(!redisAvailable)("redisStore, on a real Redis", () => {
  let redis: { url: string; stop(): Promise<void> };
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(() => redis?.stop());

  /** Two clients of one server and key, each with its own store on one prefix: two processes of a fleet. */
  function fleet(server: ReferenceServer, prefix: string, options = {}): RenderClient[] {
    return [1, 2].map(() =>
      createRenderClient({
        baseUrl: server.url,
        apiKey: server.apiKey,
        limiter: { store: redisStore({ url: redis.url, keyPrefix: prefix }), ...options },
      }),
    );
  }

  it("shares one quota: two clients render exactly what it allows, and neither sends after it is spent", async () => {
    const server = await startReferenceServer({ scenario: { quota: { renders: 30, periodMs: hour } } });
    const clients = fleet(server, uniquePrefix("quota"));
    try {
      const [a, b] = await Promise.all(clients.map((client, i) => renderSome(client, 40, `client ${i}`)));
      expect(a!.rendered + b!.rendered).toBe(30);
      expect([...a!.failed, ...b!.failed].every((code) => code === "quota_exceeded" || code === "quota_wait_too_long")).toBe(true);
      const exceeded = server.ledger.entries().filter((e) => e.status === 429);
      // Each client may learn of the spent quota from a 429 of its own; after that, nothing is sent.
      expect(exceeded.length).toBeLessThanOrEqual(2);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
      await server.close();
    }
  });

  it("shares a halt: after one client's 401, the other sends nothing", async () => {
    const server = await startReferenceServer();
    const prefix = uniquePrefix("halt");
    const store = (name: string) => createRenderClient({ baseUrl: server.url, apiKey: name, limiter: { store: redisStore({ url: redis.url, keyPrefix: prefix }) } });
    const [first, second] = [store("rg_live_revoked_key_000000000000"), store("rg_live_revoked_key_000000000000")];
    try {
      await expect(first!.render({ html: "<p>1</p>" })).rejects.toMatchObject({ code: "invalid_api_key" });
      const sent = server.ledger.entries().length;
      await expect(second!.render({ html: "<p>2</p>" })).rejects.toMatchObject({ code: "invalid_api_key", billed: false });
      expect(server.ledger.entries().length).toBe(sent);
      expect(second!.stats().halted?.code).toBe("invalid_api_key");
    } finally {
      await Promise.all([first!.close(), second!.close()]);
      await server.close();
    }
  });

  it("shares a circuit breaker's opening: the other client sends nothing until it would probe", async () => {
    const server = await startReferenceServer({ scenario: { faults: [{ fault: "internal_error", fromMs: 0, toMs: 1_500 }] } });
    const [failing, other] = fleet(server, uniquePrefix("breaker"), {});
    const openings: Date[] = [];
    failing!.onBreakerOpen(({ until }) => openings.push(until));
    try {
      const failed = renderSome(failing!, 8, "failing");
      await expect.poll(() => openings.length).toBe(1);
      const rendered = await other!.render({ html: "<p>other</p>" });
      expect(rendered.status).toBe(200);
      const [otherSend] = server.ledger.entries().filter((e) => e.keyId !== null && e.bodySha256 === bodySha("<p>other</p>"));
      expect(otherSend!.at).toBeGreaterThanOrEqual(openings[0]!.getTime());
      await failed;
    } finally {
      await Promise.all([failing!.close(), other!.close()]);
      await server.close();
    }
  });

  it("shares the send rate: what one client's 429s teach paces the other", async () => {
    const server = await startReferenceServer({ scenario: { rateLimit: { ratePerSecond: 100, burst: 5 } } });
    const [learner, follower] = fleet(server, uniquePrefix("rate"));
    try {
      // 16 in flight: the learner meets the limit while some jobs wait out their Retry-After (see
      // "paces on its own" below for what 4 may learn), and goes on sending while the follower
      // renders, as a fleet does.
      const learning = renderSome(learner!, 300, "learner", 16);
      await vi.waitFor(() => expect(learner!.stats().sendRate).toBeDefined(), { timeout: 10_000, interval: 5 });
      // The follower's sends read the rate the fleet learned: a finite rate after fewer answers than
      // its own learner needs for a cut (20). One render at a time until it reads one: on a machine
      // slowed by others, the learner's trial of a cut can judge the 429s background and go back to
      // unlimited for a while.
      const followerSends = () => Object.values(follower!.stats().sends).reduce((sum, n) => sum + n, 0);
      let followerRate: number | undefined;
      let rendered = 0;
      for (let i = 0; followerRate === undefined && followerSends() < 15; i++) {
        rendered += (await renderSome(follower!, 1, `follower ${i}`)).rendered;
        followerRate = follower!.stats().sendRate;
      }
      await learning;
      expect(rendered).toBeGreaterThan(0);
      expect(followerSends()).toBeLessThan(20);
      expect(server.ledger.entries().filter((e) => e.status === 429).length).toBeGreaterThan(0);
      expect(followerRate).toBeDefined();
    } finally {
      await Promise.all([learner!.close(), follower!.close()]);
      await server.close();
    }
  });

  it("leaves a client's own ioredis connection open on close, and defines its scripts on it", async () => {
    const server = await startReferenceServer();
    const connection = new Redis(redis.url);
    const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey, limiter: { store: redisStore({ client: connection, keyPrefix: uniquePrefix("own") }) } });
    try {
      await client.render({ html: "<p>1</p>" });
      await client.close();
      expect(connection.status).toBe("ready");
      expect(typeof (connection as unknown as Record<string, unknown>).renderguardTake).toBe("function");
    } finally {
      connection.disconnect();
      await server.close();
    }
  });

  it("renews the slots of sends in flight while their process lives, and gives them back on close", async () => {
    const server = await startReferenceServer({ scenario: { renderDelayMs: 5_000 } });
    const prefix = uniquePrefix("lease");
    const leases = `{${prefix}}:leases`;
    const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey, limiter: { store: redisStore({ url: redis.url, keyPrefix: prefix, leaseMs: 300 }) } });
    const inspect = new Redis(redis.url);
    const live = () => inspect.zcount(leases, Date.now(), "+inf"); // unexpired, whether or not pruned yet
    try {
      const renders = [1, 2, 3].map((i) => client.render({ html: `<p>${i}</p>` }).catch(() => undefined));
      await expect.poll(live).toBe(3);
      await new Promise((resolve) => setTimeout(resolve, 700)); // past two lease times: renewed
      expect(await live()).toBe(3);
      await client.close(); // the jobs in flight are aborted: their slots go back at once
      expect(await inspect.zcard(leases)).toBe(0);
      await Promise.all(renders);
    } finally {
      inspect.disconnect();
      await server.close();
    }
  });

  it("does not take its own stall for Redis's: a reply that came while the process was busy past the time-out is read", async () => {
    const store = redisStore({ url: redis.url, keyPrefix: uniquePrefix("stall"), timeoutMs: 50 });
    const degraded: Error[] = [];
    store.open?.({
      settings: { concurrency: limiterDefaults.concurrency, minRate: limiterDefaults.minRate },
      scope: "stall",
      clock: systemClock,
      logger: silentLogger,
      degraded: ({ error }) => degraded.push(error),
    });
    try {
      const first = await store.acquire(Date.now());
      expect(first).toHaveProperty("seq", 1);
      const pending = store.acquire(Date.now());
      for (let tick = 0; tick < 20; tick++) await null; // the script is on its way to Redis
      const busyUntil = Date.now() + 150; // three time-outs of work, with Redis's reply waiting unread
      while (Date.now() < busyUntil);
      expect(await pending).toHaveProperty("seq", 2);
      expect(degraded).toEqual([]);
    } finally {
      await store.close?.();
    }
  });

  it("goes on alone when Redis is away, with a warning and one storeDegraded event, and rejoins when it is back", async () => {
    const own = await startRedis();
    const server = await startReferenceServer();
    const logger = capturedLogger();
    const prefix = uniquePrefix("away");
    const client = createRenderClient({
      baseUrl: server.url,
      apiKey: server.apiKey,
      logger: logger.logger,
      limiter: { store: redisStore({ url: own.url, keyPrefix: prefix, timeoutMs: 200 }) },
    });
    const degraded: Error[] = [];
    client.onStoreDegraded(({ error }) => degraded.push(error));
    const inspect = new Redis(own.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      expect((await renderSome(client, 8, "before")).rendered).toBe(8);
      await own.stop();
      expect((await renderSome(client, 8, "away")).rendered).toBe(8);
      expect(degraded).toHaveLength(1);
      expect(logger.lines.some((line) => /"level":40.*Redis store failed/.test(line))).toBe(true);
      await own.start();
      // Back (empty): within a rejoin interval, sends go through Redis again and write its record anew.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await inspect.connect();
      await expect
        .poll(async () => {
          await renderSome(client, 4, "back");
          return inspect.hget(`{${prefix}}:state`, "record");
        }, { timeout: 10_000, interval: 300 })
        .not.toBeNull();
      expect(degraded).toHaveLength(1);
    } finally {
      inspect.disconnect();
      await client.close();
      await server.close();
      await own.stop();
    }
  });

  it("paces on its own, once Redis is away, by the rate the fleet learned: it does not meet the limit anew from nothing", async () => {
    const own = await startRedis();
    const server = await startReferenceServer({ scenario: { rateLimit: { ratePerSecond: 100, burst: 5 } } });
    const client = createRenderClient({
      baseUrl: server.url,
      apiKey: server.apiKey,
      limiter: { store: redisStore({ url: own.url, keyPrefix: uniquePrefix("alone") }) },
    });
    const degraded: Error[] = [];
    client.onStoreDegraded(({ error }) => degraded.push(error));
    try {
      // 16 in flight, as a batch sends: the fleet meets the limit while some jobs wait out their
      // Retry-After. With 4, all four wait a whole second at once after each burst of 429s, the
      // goodput over that second can be a tenth of the limit, and the climb from it may pass 10 x that
      // (back to unlimited) before it meets the limit again.
      // Where the cut lands, and whether a cut on trial is undone for a while, depends on the
      // machine's load: that the fleet learned a rate is this test's premise, not its point.
      await expect
        .poll(async () => {
          await renderSome(client, 50, "learning", 16);
          return client.stats().sendRate;
        }, { timeout: 10_000, interval: 0 })
        .toBeDefined();
      expect(degraded).toEqual([]);
      await own.stop();
      expect((await renderSome(client, 4, "alone")).rendered).toBe(4);
      expect(degraded).toHaveLength(1);
      expect(degraded[0]?.message).toMatch(/^The limiter's Redis store failed \(Redis at 127\.0\.0\.1:\d+\): /);
      // Its own state's rate is the learned one, give or take the climb since; not unlimited.
      expect(client.stats().sendRate).toBeDefined();
      expect(client.stats().sendRate).toBeLessThan(300);
    } finally {
      await client.close();
      await server.close();
      await own.stop();
    }
  });

  it.skipIf(!redisServerPath)("says why it could not connect: a wrong password, not a closed connection, and never the password", async () => {
    const own = await startRedis(["--requirepass", "right-one"]);
    const server = await startReferenceServer();
    const url = own.url.replace("redis://", "redis://:wrong-one@");
    const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey, limiter: { store: redisStore({ url, timeoutMs: 200 }) } });
    const degraded: Error[] = [];
    client.onStoreDegraded(({ error }) => degraded.push(error));
    try {
      expect((await renderSome(client, 2, "password")).rendered).toBe(2);
      expect(degraded[0]?.message).toMatch(/\(WRONGPASS /);
      expect(degraded[0]?.message).not.toMatch(/wrong-one/);
    } finally {
      await client.close();
      await server.close();
      await own.stop();
    }
  });

  it("works on its own state from the start when Redis cannot be reached at all", async () => {
    const server = await startReferenceServer();
    const port = await freePort(); // nothing listens there
    const client = createRenderClient({
      baseUrl: server.url,
      apiKey: server.apiKey,
      limiter: { store: redisStore({ url: `redis://127.0.0.1:${port}`, timeoutMs: 200 }) },
    });
    const degraded: Error[] = [];
    client.onStoreDegraded(({ error }) => degraded.push(error));
    try {
      expect((await renderSome(client, 10, "unreachable")).rendered).toBe(10);
      expect(degraded).toHaveLength(1);
    } finally {
      await client.close();
      await server.close();
    }
  });
});

describe.skipIf(!redisAvailable)("redisStore, two processes' answers recorded in any order", () => {
  let redis: { url: string; stop(): Promise<void> };
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(() => redis?.stop());

  const settings = { concurrency: 1_000, minRate: 1 };
  const accepted = (remaining: number): Observation => ({ effect: "accepted", remaining, retryAt: undefined });

  /** Opens `stores` on a fake clock: the processes of a fleet. */
  function open<T extends ReturnType<typeof redisStore>[]>(clock: FakeClock, ...stores: T): T {
    for (const store of stores) store.open?.({ settings, scope: "order", logger: silentLogger, clock, degraded: ({ error }) => expect.fail(error.message) });
    return stores;
  }

  /** Sends granted at `now` until the first refusal. */
  async function grants(store: ReturnType<typeof redisStore>, now: number): Promise<number> {
    for (let granted = 0; ; granted++) if (!("seq" in (await store.acquire(now)))) return granted;
  }

  it("takes no higher count from an answer the service made before the count in force, though its send was granted after", async () => {
    const clock = new FakeClock();
    const prefix = uniquePrefix("late-answer");
    const [a, b] = open(clock, redisStore({ url: redis.url, keyPrefix: prefix, timeoutMs: 5_000 }), redisStore({ url: redis.url, keyPrefix: prefix, timeoutMs: 5_000 }));
    try {
      const now = clock.now();
      const first = (await a.acquire(now)) as Ticket;
      await a.release(first, accepted(10), now);
      // One send each; the service renders b's first (9 left), then a's (8 left). a's answer is
      // recorded first, b's later (its process was slower, or lost races for the record).
      const sentFirst = (await a.acquire(now)) as Ticket;
      const sentSecond = (await b.acquire(now)) as Ticket;
      expect(sentSecond.seq).toBeGreaterThan(sentFirst.seq);
      await a.release(sentFirst, accepted(8), now);
      await b.release(sentSecond, accepted(9), now);
      // 8 left, not 9: the fleet sends 8 more, and the 9th waits (before, it was sent and met a 429).
      expect((b.snapshot(now) as LimiterSnapshot).remaining).toBe(8);
      expect(await grants(a, now)).toBe(8);
    } finally {
      await Promise.all([a.close?.(), b.close?.()]);
    }
  });

  it("still takes a higher count as a refill from a send granted after the count in force came", async () => {
    const clock = new FakeClock();
    const prefix = uniquePrefix("refill");
    const [a, b] = open(clock, redisStore({ url: redis.url, keyPrefix: prefix, timeoutMs: 5_000 }), redisStore({ url: redis.url, keyPrefix: prefix, timeoutMs: 5_000 }));
    try {
      const now = clock.now();
      const first = (await a.acquire(now)) as Ticket;
      // b read the state before a's count came: its grant after it is still after it.
      const early = (await b.acquire(now)) as Ticket;
      await b.release(early, accepted(9), now);
      const after = (await a.acquire(now)) as Ticket;
      await a.release(first, accepted(2), now); // made last of the three: the count in force
      await a.release(after, accepted(500), now); // sent after that count came: a refill
      expect(await grants(b, now)).toBeGreaterThan(400);
    } finally {
      await Promise.all([a.close?.(), b.close?.()]);
    }
  });

  it("records an answer however many races for the record it loses: its slot never goes back with its answer unrecorded", async () => {
    const clock = new FakeClock();
    const prefix = uniquePrefix("races");
    const connection = new Redis(redis.url);
    const [store] = open(clock, redisStore({ client: connection, keyPrefix: prefix, timeoutMs: 5_000 }));
    try {
      const now = clock.now();
      const ticket = (await store.acquire(now)) as Ticket; // defines the store's scripts on the connection
      // Another process writes the record before each of this one's first 12 tries.
      const scripts = connection as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      const settleScript = scripts.renderguardSettle!.bind(connection);
      let races = 12;
      scripts.renderguardSettle = async (...args) => {
        if (races-- > 0) await connection.hincrby(`{${prefix}}:state`, "version", 1);
        return settleScript(...args);
      };
      await store.release(ticket, accepted(5), now);
      expect(races).toBeLessThan(0);
      expect(JSON.parse((await connection.hget(`{${prefix}}:state`, "record")) ?? "{}")).toMatchObject({ remaining: 5 });
      expect(await connection.zcard(`{${prefix}}:leases`)).toBe(0);
      expect(await grants(store, now)).toBe(5);
    } finally {
      await store.close?.();
      connection.disconnect();
    }
  });
});

describe.skipIf(!redisAvailable)("redisStore, the same rules as the memory store", () => {
  let redis: { url: string; stop(): Promise<void> };
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(() => redis?.stop());

  /**
   * A service of 50 sends a second (burst 3) and 60 renders a period: it answers each send when it
   * is sent (the answer arrives later), so both sides see the same answers for the same sends.
   */
  function service(start: number) {
    let tokens = 3;
    let at = start;
    let left = 60;
    let refillAt = 0;
    return (sentAt: number): Observation => {
      tokens = Math.min(3, tokens + ((sentAt - at) * 50) / 1000);
      at = sentAt;
      if (tokens < 1) return { effect: "slow_down", remaining: undefined, retryAt: sentAt + 40 };
      tokens--;
      if (refillAt && sentAt >= refillAt) [left, refillAt] = [60, 0];
      if (left === 0) {
        refillAt ||= sentAt + 700;
        return { effect: "quota_out", remaining: 0, retryAt: refillAt };
      }
      left--;
      // Now and then a render's answer says no count (a proxy dropped the header).
      return { effect: "accepted", remaining: sentAt % 7 === 0 ? undefined : left, retryAt: undefined };
    };
  }

  it("two stores on one Redis decide every send and answer exactly as one memory store does", async () => {
    const clock = new FakeClock();
    const settings = { concurrency: 1_000, minRate: 1 };
    const memory = memoryLimiterStore(settings);
    const prefix = uniquePrefix("same-rules");
    const fleet = [redisStore({ url: redis.url, keyPrefix: prefix, timeoutMs: 5_000 }), redisStore({ url: redis.url, keyPrefix: prefix, timeoutMs: 5_000 })];
    const degraded: Error[] = [];
    for (const store of fleet) store.open?.({ settings, scope: "same", logger: silentLogger, clock, degraded: ({ error }) => degraded.push(error) });
    const answer = service(clock.now());
    /** Sends in flight: each side's ticket, the store that took it, when its answer comes and what it says. */
    const inFlight: { mine: Ticket; theirs: Ticket; store: number; at: number; seen: Observation }[] = [];
    const tally = { granted: 0, probes: 0, refused: new Map<string, number>(), changes: new Map<string, number>() };
    const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
    try {
      for (let step = 0; step < 600; step++) {
        const now = clock.now();
        // The answers due, in the order they come (latency differs by send: not in the order sent).
        const due = inFlight.filter((send) => send.at <= now).sort((a, b) => a.at - b.at || a.mine.seq - b.mine.seq);
        for (const send of due) {
          inFlight.splice(inFlight.indexOf(send), 1);
          const expected = await memory.release(send.mine, send.seen, now);
          const got = await fleet[send.store]!.release(send.theirs, send.seen, now);
          expect(got, `answer to send ${send.mine.seq} at step ${step}`).toEqual(expected);
          for (const change of got) count(tally.changes, change.kind);
          const [a, b] = [memory.snapshot(now), fleet[send.store]!.snapshot(now) as LimiterSnapshot];
          expect({ ...b, inFlight: 0 }, `state after send ${send.mine.seq}'s answer`).toEqual({ ...a, inFlight: 0 });
        }
        // Up to three sends asked for, by the two processes in turn.
        for (let ask = 0; ask < 3; ask++) {
          const store = (step + ask) % 2;
          const expected = await memory.acquire(now);
          const got = await fleet[store]!.acquire(now);
          if ("seq" in expected) {
            expect(got, `send at step ${step}`).toEqual(expected);
            tally.granted++;
            if (expected.probe) tally.probes++;
            inFlight.push({ mine: expected, theirs: got as Ticket, store, at: now + 8 + ((step * 7 + ask * 5) % 23), seen: answer(now) });
            continue;
          }
          // A wait "until a send finishes" is, from a shared store, a time to ask again.
          expect("seq" in got ? got : { ...got, until: expected.until === undefined ? undefined : got.until }, `refusal at step ${step}`).toEqual(expected);
          count(tally.refused, expected.reason);
          break;
        }
        clock.advance(3 + (step % 5));
      }
      // The run met every rule it is meant to prove: the pace, the quota and its probe, the learner's cuts.
      expect(tally.granted).toBeGreaterThan(100);
      expect(tally.probes).toBeGreaterThan(0);
      expect(tally.refused.get("rate")).toBeGreaterThan(10);
      expect(tally.refused.get("quota")).toBeGreaterThan(10);
      expect(tally.changes.get("quota_exhausted")).toBeGreaterThan(0);
      expect(tally.changes.get("rate")).toBeGreaterThan(0);
      expect(degraded).toEqual([]);
    } finally {
      await Promise.all(fleet.map((store) => store.close?.()));
    }
  });
});
