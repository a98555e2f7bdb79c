import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
    expect(revoked.err()).toContain(`renderguard resume --queue ${queue.name} once fixed`);

    const paused = new RegExp(`the queue ${queue.name} is paused \\(invalid_api_key \\(401\\): .*\\): renderguard resume --queue ${queue.name} when fixed`);
    const enqueue = runCli(["enqueue", input, ...where], {});
    expect((await enqueue.exit)[0]).toBe(0);
    expect(enqueue.err()).toMatch(paused);
    const idle = runCli(["worker", ...where, "--out", out, "--base-url", server.url, "--exit-when-drained"], { RENDER_API_KEY: server.apiKey });
    expect((await idle.exit)[0]).toBe(3);
    expect(idle.err().match(paused)).toHaveLength(1);

    const resume = runCli(["resume", ...where], {});
    expect((await resume.exit)[0]).toBe(0);
    expect(resume.out()).toMatch(new RegExp(`^resumed the queue ${queue.name}, paused because invalid_api_key \\(401\\): `));
    expect(await queue.isPaused()).toBe(false);

    const worker = runCli(["worker", ...where, "--out", out, "--base-url", server.url, "--exit-when-drained"], { RENDER_API_KEY: server.apiKey });
    expect((await worker.exit)[0]).toBe(0);
    expect(row(worker.out(), "rendered")).toBe(1);
    expect(worker.err()).not.toContain("is paused");
  });
});
