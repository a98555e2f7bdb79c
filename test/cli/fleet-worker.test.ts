import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bodyHash, byBody } from "../e2e/support.js";
import { jobsFile, runCli, workdir } from "../support/cli.js";
import { fleetSetup, row } from "../support/fleet-cli.js";
import { redisAvailable, sharedRedis } from "../support/redis.js";

describe.skipIf(!redisAvailable)("renderguard worker", () => {
  let redis: { url: string; stop(): Promise<void> };
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(() => redis?.stop());

  it("two workers with --exit-when-drained render every job exactly once, and exit 0", async () => {
    const { server, where } = await fleetSetup(redis.url, { renderDelayMs: 5 });
    const dir = workdir();
    const input = jobsFile(dir, 60);
    expect((await runCli(["enqueue", input, ...where], {}).exit)[0]).toBe(0);
    const out = join(dir, "out");
    const worker = () =>
      runCli(["worker", ...where, "--out", out, "--base-url", server.url, "--concurrency", "4", "--exit-when-drained"], { RENDER_API_KEY: server.apiKey });
    const workers = [worker(), worker()];
    const exits = await Promise.all(workers.map((run) => run.exit));
    expect(exits).toEqual([
      [0, null],
      [0, null],
    ]);
    expect(server.ledger.billedCount()).toBe(60);
    for (let i = 0; i < 60; i++) {
      const sends = byBody(server.ledger).get(bodyHash(`<p>${i}</p>`)) ?? [];
      expect(sends.filter((entry) => entry.billed)).toHaveLength(1);
    }
    expect(readdirSync(out).filter((name) => name.endsWith(".pdf"))).toHaveLength(60);
    expect(workers.reduce((total, run) => total + row(run.out(), "rendered"), 0)).toBe(60);
    for (const run of workers) expect(run.out()).toContain("the queue is drained");
  });

  it("on SIGTERM takes no more jobs, finishes those in flight, prints the summary, and loses none", async () => {
    const { server, queue, where } = await fleetSetup(redis.url, { renderDelayMs: 20 });
    const dir = workdir();
    expect((await runCli(["enqueue", jobsFile(dir, 60), ...where], {}).exit)[0]).toBe(0);
    const run = runCli(["worker", ...where, "--out", join(dir, "out"), "--base-url", server.url, "--concurrency", "4"], { RENDER_API_KEY: server.apiKey });
    while (server.ledger.billedCount() < 8) await new Promise((resolve) => setTimeout(resolve, 5));
    run.child.kill("SIGTERM");
    expect(await run.exit).toEqual([0, null]);
    expect(run.out()).toContain("stopped by SIGTERM: the jobs not taken stay in the queue");
    const counts = await queue.getJobCounts("wait", "active", "completed", "failed", "delayed");
    expect(counts.active).toBe(0);
    expect(counts.failed).toBe(0);
    expect(counts.completed).toBe(row(run.out(), "rendered"));
    expect(counts.completed).toBe(server.ledger.billedCount()); // every render billed was kept
    expect(counts.wait).toBeGreaterThan(0);
    expect((counts.wait ?? 0) + (counts.completed ?? 0)).toBe(60);
  });

  it("on SIGTERM with no job in flight says only that it stops, and exits 0", async () => {
    const { server, where } = await fleetSetup(redis.url);
    const run = runCli(["worker", ...where, "--out", join(workdir(), "out"), "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
    // Its first line comes once it listens for signals.
    while (!run.err().includes("worker: queue ")) await new Promise((resolve) => setTimeout(resolve, 5));
    run.child.kill("SIGTERM");
    expect(await run.exit).toEqual([0, null]);
    expect(run.err()).toContain("stopping: no job in flight\n");
    expect(run.err()).not.toContain("a second signal");
  });

  it("exits at once on a second signal, with the jobs in flight left for BullMQ's stalled check", async () => {
    const { server, queue, where } = await fleetSetup(redis.url, { renderDelayMs: 30_000 }); // renders outlast the test
    const dir = workdir();
    expect((await runCli(["enqueue", jobsFile(dir, 4), ...where], {}).exit)[0]).toBe(0);
    const run = runCli(["worker", ...where, "--out", join(dir, "out"), "--base-url", server.url, "--concurrency", "2"], { RENDER_API_KEY: server.apiKey });
    while ((await queue.getJobCounts("active")).active !== 2) await new Promise((resolve) => setTimeout(resolve, 5));
    run.child.kill("SIGTERM");
    // How many of the 2 the client had begun to send when the signal came (none: "no job in flight") depends on the machine's load.
    while (!run.err().includes("stopping: ")) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 150)); // a second signal, not the same one sent twice
    run.child.kill("SIGINT");
    expect(await run.exit).toEqual([1, null]);
    expect(run.out()).toContain("exited by a second signal");
    expect(await queue.getJobCounts("wait", "active", "completed")).toEqual({ wait: 2, active: 2, completed: 0 });
  });

  it("stops at its spend cap (--max-billed), leaves the other jobs waiting, and exits 1", async () => {
    const { server, queue, where } = await fleetSetup(redis.url);
    const dir = workdir();
    expect((await runCli(["enqueue", jobsFile(dir, 5), ...where], {}).exit)[0]).toBe(0);
    const run = runCli(["worker", ...where, "--out", join(dir, "out"), "--base-url", server.url, "--concurrency", "1", "--max-billed", "2"], {
      RENDER_API_KEY: server.apiKey,
    });
    expect(await run.exit).toEqual([1, null]);
    expect(run.out()).toContain("the spend cap (--max-billed 2) is reached");
    expect(server.ledger.billedCount()).toBe(2);
    expect(await queue.getJobCounts("wait", "active", "completed", "failed")).toEqual({ wait: 3, active: 0, completed: 2, failed: 0 });
  });

  it("halts on a rejected key: the queue is paused, its jobs kept, and the worker exits 3", async () => {
    const { server, queue, where } = await fleetSetup(redis.url);
    const dir = workdir();
    expect((await runCli(["enqueue", jobsFile(dir, 3), ...where], {}).exit)[0]).toBe(0);
    const run = runCli(["worker", ...where, "--out", join(dir, "out"), "--base-url", server.url, "--concurrency", "1"], {
      RENDER_API_KEY: server.keys.revoked as string,
    });
    expect(await run.exit).toEqual([3, null]);
    expect(run.err()).toContain("Check RENDER_API_KEY");
    expect(await queue.isPaused()).toBe(true);
    expect(await queue.getJobCounts("wait", "active", "failed")).toEqual({ wait: 3, active: 0, failed: 0 });
    expect(server.ledger.count({ code: "invalid_api_key" })).toBe(1);
  });
});
