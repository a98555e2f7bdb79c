import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, workdir } from "../support/cli.js";
import { freePort, redisServerPath, startRedis } from "../support/redis.js";

/** Polls `read` until it holds `text`: the process got that far. */
async function until(read: () => string, text: string): Promise<void> {
  while (!read().includes(text)) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe("renderguard fleet commands: a Redis that does not answer", () => {
  it.each([
    ["enqueue", "jobs.jsonl"],
    ["status"],
    ["worker", "--out", "out", "--base-url", "http://127.0.0.1:1"],
  ])("%s fails at once with exit 2, naming Redis, its URL without the password, and the cause", async (...args) => {
    const port = await freePort();
    const run = runCli([...args, "--redis", `redis://user:secret@127.0.0.1:${port}`], { RENDER_API_KEY: "rk_test_x" });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toBe(`renderguard: cannot use Redis at "redis://user:***@127.0.0.1:${port}": connect ECONNREFUSED 127.0.0.1:${port}; nothing was done\n`);
  });

  it.skipIf(!redisServerPath)("a worker whose Redis went away says so once, no stack trace, and stops on the first SIGTERM", async () => {
    const redis = await startRedis();
    try {
      const dir = workdir();
      const worker = runCli(["worker", "--redis", redis.url, "--out", join(dir, "out"), "--base-url", "http://127.0.0.1:1"], { RENDER_API_KEY: "rk_test_x" });
      await until(worker.err, "done |");
      expect(worker.err()).toContain(`worker: queue renderguard on Redis "${redis.url}", PDFs to ${join(dir, "out")}, rendering at http://127.0.0.1:1\n`);
      await redis.stop();
      await until(worker.err, "does not answer");
      worker.child.kill("SIGTERM");
      expect(await worker.exit).toEqual([0, null]);
      expect(worker.err().match(/does not answer/g)).toHaveLength(1);
      expect(worker.err()).not.toMatch(/^\s+at |^worker: .*(ECONNRESET|EPIPE|closed)|^renderguard: /m);
      expect(worker.out()).toContain("stopped by SIGTERM");
    } finally {
      await redis.stop();
    }
  });
});
