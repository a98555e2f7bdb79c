import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobsFile, runCli, workdir } from "../support/cli.js";
import { fleetSetup, row } from "../support/fleet-cli.js";
import { redisAvailable, sharedRedis, uniquePrefix } from "../support/redis.js";

/** Runs `status --json` on the queue `where` names, to its exit. */
async function statusJson(where: string[]) {
  const run = runCli(["status", ...where, "--json"], {});
  expect((await run.exit)[0]).toBe(0);
  return run;
}

describe.skipIf(!redisAvailable)("renderguard status", () => {
  let redis: { url: string; stop(): Promise<void> };
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(() => redis?.stop());

  it("counts jobs by state, the renders billed and the failures by code, as the server's ledger has them", async () => {
    const { server, queue, where } = await fleetSetup(redis.url);
    const dir = workdir();
    const input = join(dir, "jobs.jsonl");
    // Every 4th page carries the reference server's marker for a page that fails to render (422, billed).
    const lines = Array.from({ length: 12 }, (_, i) => JSON.stringify({ id: `doc-${i}`, html: `<p>${i}</p>${i % 4 === 0 ? "<!-- render:fail -->" : ""}` }));
    writeFileSync(input, `${lines.join("\n")}\n`);
    expect((await runCli(["enqueue", input, ...where], {}).exit)[0]).toBe(0);
    // What BullMQ's stalled check leaves on a job whose worker died: its count of stalls.
    const stalled = (await queue.getJobs(["wait"])).find((job) => (job.data as { id: string }).id === "doc-1");
    const client = new Redis(redis.url);
    await client.hset(queue.toKey(stalled?.id as string), "stc", 1);
    client.disconnect();
    const worker = runCli(["worker", ...where, "--out", join(dir, "out"), "--base-url", server.url, "--exit-when-drained"], { RENDER_API_KEY: server.apiKey });
    expect((await worker.exit)[0]).toBe(1);
    expect(worker.out()).toMatch(/^ {2}render_failed +3 {2}\(/m);

    const json = runCli(["status", ...where, "--json"], {});
    expect((await json.exit)[0]).toBe(0);
    // Not rateLimitedUntil: a wait the worker met on a loaded machine may have set one; its own test below.
    expect(JSON.parse(json.out())).toMatchObject({
      queue: queue.name,
      counts: { waiting: 0, active: 0, delayed: 0, prioritized: 0, completed: 9, failed: 3 },
      completedAfterStall: 1,
      billed: server.ledger.billedCount(),
      possiblyBilled: 0,
      failures: { render_failed: 3 },
      paused: false,
      pausedBecause: null,
    });
    expect(server.ledger.billedCount()).toBe(12);

    const table = runCli(["status", ...where], {});
    expect((await table.exit)[0]).toBe(0);
    expect(row(table.out(), "completed")).toBe(9);
    expect(row(table.out(), "billed")).toBe(12);
    expect(row(table.out(), "completed after a stall \\(may be billed twice\\)")).toBe(1);
    expect(table.out()).toMatch(/^ {2}render_failed +3 {2}\(billed\)$/m);

    // Made again under the same name, the queue counts nothing of the old one's.
    await queue.obliterate({ force: true });
    expect((await runCli(["enqueue", input, ...where], {}).exit)[0]).toBe(0);
    expect(JSON.parse((await statusJson(where)).out())).toMatchObject({ counts: { waiting: 12, completed: 0 }, completedAfterStall: 0, billed: 0 });
  }, 40_000);

  it("still counts what a finished job billed once enqueueing an earlier version again replaced it", async () => {
    const { server, queue, where } = await fleetSetup(redis.url);
    const dir = workdir();
    // doc-0 fails to render (422 render_failed, billed), doc-1 renders: both change, then change back.
    const input = (name: string, revised: boolean) => {
      const html = (i: number) => `<p>${i}${revised && i < 2 ? ", revised" : ""}</p>${i === 0 ? "<!-- render:fail -->" : ""}`;
      writeFileSync(join(dir, name), `${[0, 1, 2].map((i) => JSON.stringify({ id: `doc-${i}`, html: html(i) })).join("\n")}\n`);
      return join(dir, name);
    };
    const enqueueAndDrain = async (file: string, added: number) => {
      const enqueue = runCli(["enqueue", file, ...where], {});
      expect((await enqueue.exit)[0]).toBe(0);
      expect(enqueue.out()).toMatch(new RegExp(`^${added} added`));
      const worker = runCli(["worker", ...where, "--out", join(dir, "out"), "--base-url", server.url, "--exit-when-drained"], { RENDER_API_KEY: server.apiKey });
      expect((await worker.exit)[0]).toBe(1); // doc-0 failed
    };
    const original = input("jobs.jsonl", false);
    await enqueueAndDrain(original, 3);
    await enqueueAndDrain(input("jobs2.jsonl", true), 2);
    // Back to the first versions: their finished jobs are removed and added again.
    await enqueueAndDrain(original, 2);

    expect(server.ledger.billedCount()).toBe(7);
    expect(JSON.parse((await statusJson(where)).out())).toMatchObject({
      counts: { completed: 3, failed: 2 },
      billed: server.ledger.billedCount(),
      possiblyBilled: 0,
      failures: { render_failed: 2 },
    });

    // Made again under the same name, the queue counts nothing of the old one's, removed jobs' billing included.
    await queue.obliterate({ force: true });
    expect((await runCli(["enqueue", original, ...where], {}).exit)[0]).toBe(0);
    expect(JSON.parse((await statusJson(where)).out())).toMatchObject({ counts: { waiting: 3, completed: 0, failed: 0 }, billed: 0, possiblyBilled: 0 });
  }, 40_000);

  it("says the queue is paused, and why, after a worker's key was rejected", async () => {
    const { server, where } = await fleetSetup(redis.url);
    const dir = workdir();
    writeFileSync(join(dir, "jobs.jsonl"), `${JSON.stringify({ id: "a", html: "<p>a</p>" })}\n`);
    expect((await runCli(["enqueue", join(dir, "jobs.jsonl"), ...where], {}).exit)[0]).toBe(0);
    const worker = runCli(["worker", ...where, "--out", join(dir, "out"), "--base-url", server.url], { RENDER_API_KEY: server.keys.revoked as string });
    expect((await worker.exit)[0]).toBe(3);
    const status = runCli(["status", ...where, "--json"], {});
    expect((await status.exit)[0]).toBe(0);
    const { paused, pausedBecause, counts } = JSON.parse(status.out()) as { paused: boolean; pausedBecause: string; counts: { waiting: number } };
    expect(paused).toBe(true);
    expect(pausedBecause).toMatch(/^invalid_api_key \(401\): /);
    expect(counts.waiting).toBe(1);
  });

  it("hints at a mistyped --queue when the queue has no jobs and was never opened, and leaves it so", async () => {
    const hint = "no jobs: is the queue name right? (--queue, default renderguard)";
    const mistyped = ["--redis", redis.url, "--queue", uniquePrefix("no-such-queue").replaceAll(":", "-")];
    const table = runCli(["status", ...mistyped], {});
    expect((await table.exit)[0]).toBe(0);
    expect(table.out()).toContain(`\n${hint}\n`);
    // Not made to exist by the first status: the second says the same.
    expect(JSON.parse((await statusJson(mistyped)).out())).toMatchObject({ exists: false });

    // A queue BullMQ opened (fleetSetup's), empty: no hint.
    const { where } = await fleetSetup(redis.url);
    const known = runCli(["status", ...where], {});
    expect((await known.exit)[0]).toBe(0);
    expect(known.out()).not.toContain(hint);
  });

  it("gives the time the queue's rate limit ends, and no limit while workers merely take jobs", async () => {
    const { queue, where } = await fleetSetup(redis.url);
    // What a busy worker leaves: its own limiter's count of the jobs it took, not a rate limit.
    const client = new Redis(redis.url);
    await client.set(queue.toKey("limiter"), 3, "PX", 60_000);
    client.disconnect();
    const busy = runCli(["status", ...where, "--json"], {});
    expect((await busy.exit)[0]).toBe(0);
    expect(JSON.parse(busy.out())).toMatchObject({ rateLimitedUntil: null });

    await queue.rateLimit(60_000);
    const before = Date.now();
    const status = runCli(["status", ...where, "--json"], {});
    expect((await status.exit)[0]).toBe(0);
    const until = Date.parse((JSON.parse(status.out()) as { rateLimitedUntil: string }).rateLimitedUntil);
    expect(until).toBeGreaterThan(before);
    expect(until).toBeLessThanOrEqual(Date.now() + 60_000);
  });

  it("says why the queue waits: the spent quota a worker met, for as long as the wait lasts", async () => {
    const { server, queue, where } = await fleetSetup(redis.url, { quota: { renders: 2, periodMs: 60 * 60 * 1000 } });
    const dir = workdir();
    expect((await runCli(["enqueue", jobsFile(dir, 4), ...where], {}).exit)[0]).toBe(0);
    const worker = runCli(["worker", ...where, "--out", join(dir, "out"), "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
    try {
      while ((await queue.getRateLimitTtl()) <= 0) await new Promise((resolve) => setTimeout(resolve, 20));
      const { rateLimitedUntil, rateLimitedBecause, counts } = JSON.parse((await statusJson(where)).out()) as {
        rateLimitedUntil: string;
        rateLimitedBecause: string;
        counts: { waiting: number; completed: number };
      };
      expect(Date.parse(rateLimitedUntil)).toBeGreaterThan(Date.now() + 50 * 60 * 1000);
      expect(rateLimitedBecause).toMatch(/^quota_(exceeded \(429\)|wait_too_long): /);
      expect(counts).toMatchObject({ waiting: 2, completed: 2 });
      const table = runCli(["status", ...where], {});
      expect((await table.exit)[0]).toBe(0);
      expect(table.out()).toMatch(/^rate-limited until +\S+: quota_/m);
    } finally {
      worker.child.kill("SIGTERM");
      await worker.exit;
    }
    // The note ends with the wait: a queue no longer waiting gives no reason.
    const client = new Redis(redis.url);
    await client.del(queue.toKey("limiter"));
    client.disconnect();
    expect(JSON.parse((await statusJson(where)).out())).toMatchObject({ rateLimitedUntil: null, rateLimitedBecause: null });
  });
});
