import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { renderEndpoint } from "../../src/core/endpoint.js";
import { NO_QUEUE_LIMIT } from "../../src/fleet/worker.js";
import { clientKeyPrefix, stateKeys } from "../../src/stores/redis-store.js";
import { jobsFile, runCli, workdir } from "../support/cli.js";
import { fleetSetup, row } from "../support/fleet-cli.js";
import { redisAvailable, sharedRedis } from "../support/redis.js";

describe.skipIf(!redisAvailable)("renderguard resume", () => {
  let redis: { url: string; stop(): Promise<void> };
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(() => redis?.stop());

  it("resumes a queue a rejected key paused, saying why it was paused, and a worker then renders its jobs", async () => {
    const { server, queue, where } = await fleetSetup(redis.url);
    const dir = workdir();
    const out = join(dir, "out");
    const input = jobsFile(dir, 1);
    expect((await runCli(["enqueue", input, ...where], {}).exit)[0]).toBe(0);
    const revoked = runCli(["worker", ...where, "--out", out, "--base-url", server.url], { RENDER_API_KEY: server.keys.revoked as string });
    expect((await revoked.exit)[0]).toBe(3);
    expect(revoked.err()).toContain(`renderguard resume --redis ${redis.url} --queue ${queue.name} once fixed`);

    const paused = new RegExp(`the queue ${queue.name} is paused \\(invalid_api_key \\(401\\): .*\\): renderguard resume --redis ${redis.url} --queue ${queue.name} when fixed`);
    const enqueue = runCli(["enqueue", input, ...where], {});
    expect((await enqueue.exit)[0]).toBe(0);
    expect(enqueue.err()).toMatch(paused);
    const idle = runCli(["worker", ...where, "--out", out, "--base-url", server.url, "--exit-when-drained"], { RENDER_API_KEY: server.apiKey });
    expect((await idle.exit)[0]).toBe(3);
    expect(idle.err().match(paused)).toHaveLength(1);

    // The key fixed (here: the revoked one, as if its account were restored), resume also ends the
    // minute's halt the workers' limiter keeps for it.
    const state = stateKeys(clientKeyPrefix(renderEndpoint(server.url, false), server.keys.revoked as string))[0];
    const client = new Redis(redis.url);
    onTestFinished(() => void client.disconnect());
    expect(await client.hget(state, "halt")).toMatch(/invalid_api_key/);
    const resume = runCli(["resume", ...where], { RENDER_BASE_URL: server.url, RENDER_API_KEY: server.keys.revoked as string });
    expect((await resume.exit)[0]).toBe(0);
    expect(resume.out()).toMatch(new RegExp(`^resumed the queue ${queue.name}, paused because invalid_api_key \\(401\\): `));
    expect(resume.out()).toMatch(/^ended the halt for http:\/\/127\.0\.0\.1:\d+\/v1\/render: invalid_api_key \(401\)$/m);
    expect(await client.hget(state, "halt")).toBeNull();
    expect(await queue.isPaused()).toBe(false);

    const worker = runCli(["worker", ...where, "--out", out, "--base-url", server.url, "--exit-when-drained"], { RENDER_API_KEY: server.apiKey });
    expect((await worker.exit)[0]).toBe(0);
    expect(row(worker.out(), "rendered")).toBe(1);
    expect(worker.err()).not.toContain("is paused");
  });

  it("ends the wait for a quota topped up before its Retry-After: the running worker renders the rest", async () => {
    const hour = 60 * 60 * 1000;
    // The server's clock, moved on an hour below: a new period, 2 renders more, as a top-up would give.
    let shift = 0;
    const { server, queue, where } = await fleetSetup(redis.url, { quota: { renders: 2, periodMs: hour } }, () => Date.now() + shift);
    const dir = workdir();
    expect((await runCli(["enqueue", jobsFile(dir, 4), ...where], {}).exit)[0]).toBe(0);
    const env = { RENDER_BASE_URL: server.url, RENDER_API_KEY: server.apiKey };
    const worker = runCli(["worker", ...where, "--out", join(dir, "out")], env);
    try {
      while ((await queue.getRateLimitTtl(NO_QUEUE_LIMIT.max)) <= 0) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(server.ledger.billedCount()).toBe(2);

      // Without the service and key the workers use, the limiter's spent quota would stay: nothing is done.
      const blind = runCli(["resume", ...where], { RENDER_BASE_URL: "", RENDER_API_KEY: "" });
      expect((await blind.exit)[0]).toBe(2);
      expect(blind.err()).toMatch(/waits \(quota_\w+( \(429\))?: .*RENDER_BASE_URL \(or --base-url\) and RENDER_API_KEY\. Nothing was done/);
      expect(await queue.getRateLimitTtl(NO_QUEUE_LIMIT.max)).toBeGreaterThan(50 * 60 * 1000);

      // A service the workers do not use: nothing to end there, and nothing is done.
      const elsewhere = runCli(["resume", ...where, "--base-url", "http://127.0.0.1:1"], env);
      expect((await elsewhere.exit)[0]).toBe(2);
      expect(elsewhere.err()).toContain("the workers' limiter keeps nothing for http://127.0.0.1:1/v1/render");
      expect(await queue.getRateLimitTtl(NO_QUEUE_LIMIT.max)).toBeGreaterThan(50 * 60 * 1000);

      // Not topped up yet: one probe finds the quota still spent, and the queue waits again.
      const early = runCli(["resume", ...where], env);
      expect((await early.exit)[0]).toBe(0);
      const sent = server.ledger.length;
      while ((await queue.getRateLimitTtl(NO_QUEUE_LIMIT.max)) <= 0) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(server.ledger.entries().slice(sent).map((e) => e.code)).toEqual(["quota_exceeded"]);

      shift = hour;
      const resume = runCli(["resume", ...where], env);
      expect((await resume.exit)[0]).toBe(0);
      expect(resume.out()).toMatch(new RegExp(`^ended the queue ${queue.name}'s wait, because quota_`, "m"));
      expect(resume.out()).toMatch(/^ended the quota spent until \S+ for http:\/\/127\.0\.0\.1:\d+\/v1\/render: /m);
      for (let i = 0; (await queue.getJobCounts("completed")).completed! < 4; i++) {
        if (i === 300) throw new Error(`not rendered: ${JSON.stringify(await queue.getJobCounts())} ${resume.out()} ${worker.err()} ${JSON.stringify(server.ledger.entries().map((e) => [e.status, e.code]))}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(server.ledger.billedCount()).toBe(4);
    } finally {
      worker.child.kill("SIGTERM");
      await worker.exit;
    }
  }, 30_000);

  it("refuses a queue that does not exist, and leaves no key behind", async () => {
    const { queue } = await fleetSetup(redis.url);
    const typo = `${queue.name}-typo`;
    const resume = runCli(["resume", "--redis", redis.url, "--queue", typo], {});
    expect((await resume.exit)[0]).toBe(2);
    expect(resume.err()).toContain(`no queue ${typo} at this Redis: is the name right?`);
    const client = new Redis(redis.url);
    onTestFinished(() => void client.disconnect());
    expect(await client.keys(`bull:${typo}:*`)).toEqual([]);
  });
});
