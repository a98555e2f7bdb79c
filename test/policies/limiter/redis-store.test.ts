import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createRenderClient, type RenderClient } from "../../../src/client.js";
import type { RenderError } from "../../../src/errors.js";
import { limiterDefaults } from "../../../src/policies/limiter/limiter.js";
import { redisStore } from "../../../src/policies/limiter/redis-store.js";
import { silentLogger } from "../../../src/logger.js";
import { type ReferenceServer, startReferenceServer } from "../../../src/server/index.js";
import { capturedLogger } from "../../support/logger.js";
import { freePort, redisAvailable, redisServerPath, sharedRedis, startRedis, uniquePrefix } from "../../support/redis.js";

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
      // "paces on its own" below for what 4 may learn). It goes on sending while the follower
      // renders, as a fleet does: the rate they share stays at the limit, instead of climbing,
      // past it and on to unlimited, from a cut made long before on a machine slowed by others.
      const learning = renderSome(learner!, 300, "learner", 16);
      await vi.waitFor(() => expect(learner!.stats().billed).toBeGreaterThanOrEqual(100), { timeout: 10_000, interval: 5 });
      expect(learner!.stats().sendRate).toBeGreaterThan(30);
      // The follower has had no 429 of its own; its sends read what the fleet learned. Its rate is
      // read after its first render: the fleet's probe goes on meanwhile, and on a machine slowed by
      // others it can reach unlimited again (10 x the limit) before more renders end.
      const first = await renderSome(follower!, 1, "follower");
      const followerRate = follower!.stats().sendRate;
      const rest = await renderSome(follower!, 3, "follower, after");
      await learning;
      expect(first.rendered + rest.rendered).toBe(4);
      expect(server.ledger.entries().filter((e) => e.status === 429).length).toBeGreaterThan(0);
      expect(followerRate).toBeDefined();
      // Near the 100/s learned: at it, or probing a little above it (a doubling every 250 ms).
      expect(followerRate).toBeLessThan(300);
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
      expect(typeof (connection as unknown as Record<string, unknown>).renderguardAcquire).toBe("function");
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
      settings: { ...limiterDefaults, decrease: limiterDefaults.rateDecrease, recovery: limiterDefaults.rateRecovery },
      scope: "stall",
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
    const client = createRenderClient({
      baseUrl: server.url,
      apiKey: server.apiKey,
      logger: logger.logger,
      limiter: { store: redisStore({ url: own.url, keyPrefix: uniquePrefix("away"), timeoutMs: 200 }) },
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
      // Back: within a rejoin interval, sends go through Redis again (the answers stream fills).
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await inspect.connect();
      await expect
        .poll(async () => {
          await renderSome(client, 4, "back");
          return inspect.keys("*answers");
        }, { timeout: 10_000, interval: 300 })
        .toHaveLength(1);
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
      limiter: { store: redisStore({ url: own.url, keyPrefix: uniquePrefix("alone"), timeoutMs: 200 }) },
    });
    const degraded: Error[] = [];
    client.onStoreDegraded(({ error }) => degraded.push(error));
    try {
      // 16 in flight, as a batch sends: the fleet meets the limit while some jobs wait out their
      // Retry-After. With 4, all four wait a whole second at once after each burst of 429s, the
      // goodput over that second can be a tenth of the limit, and the climb from it may pass 10 x that
      // (back to unlimited) before it meets the limit again.
      await renderSome(client, 100, "learning", 16);
      expect(client.stats().sendRate).toBeGreaterThan(30);
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
