import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fleetDemoSeed } from "../../src/cli/demo-fleet.js";
import { renderEndpoint } from "../../src/core/endpoint.js";
import { defaultKeySpecs } from "../../src/server/keys.js";
import { clientKeyPrefix, stateKeys } from "../../src/stores/redis-store.js";
import { runCli, workdir } from "../support/cli.js";
import { row } from "../support/fleet-cli.js";
import { redisAvailable, sharedRedis } from "../support/redis.js";

describe.skipIf(!redisAvailable)("renderguard demo --fleet", () => {
  let redis: { url: string; stop(): Promise<void> };
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(() => redis?.stop());

  it("renders the demo batch with three workers, and the queue's billed renders match the server's", async () => {
    const run = runCli(["demo", "--fleet", "--out", join(workdir(), "demo"), "--jobs", "80"], { RENDERGUARD_REDIS_URL: redis.url });
    expect((await run.exit)[0]).toBe(0);
    for (const worker of [1, 2, 3]) expect(run.out()).toContain(`worker ${worker} | `);
    expect(run.out()).toContain("the server billed 80 renders, as the queue counts: none billed twice");
    // The 2 failing pages fail in one worker or two: a 1 is said to be expected.
    expect(run.out()).toMatch(/all workers done \(exit codes [01], [01], [01]; .*1: some of its jobs failed, as the demo's failing pages do/);
    expect(row(run.out(), "completed")).toBe(78); // every 40th page fails to render, billed
    expect(run.out()).toMatch(/^ {2}render_failed +2 {2}\(billed\)$/m);
    // Nothing of the demo is left in a Redis it was given: its queue, nor the workers' limiter state.
    const serverUrl = /^reference server on (\S+):/m.exec(run.out())?.[1];
    expect(serverUrl).toBeDefined();
    const queue = /^Redis \S+, queue (\S+)$/m.exec(run.out())?.[1];
    expect(queue).toBeDefined();
    const inspect = new Redis(redis.url);
    try {
      expect(await inspect.keys(`bull:${queue}:*`)).toEqual([]);
      const apiKey = defaultKeySpecs(fleetDemoSeed).find(({ id }) => id === "main")?.key as string;
      const prefix = clientKeyPrefix(renderEndpoint(serverUrl as string, true), apiKey);
      expect(await inspect.exists(...stateKeys(prefix))).toBe(0);
    } finally {
      inspect.disconnect();
    }
  }, 60_000);
});

describe("renderguard demo --fleet without a Redis", () => {
  it("names both ways to give it one", async () => {
    // An empty folder as the PATH: no redis-server on it (node is started by its full path).
    const run = runCli(["demo", "--fleet", "--out", join(workdir(), "demo"), "--jobs", "3"], { RENDERGUARD_REDIS_URL: "", PATH: workdir() });
    expect((await run.exit)[0]).toBe(1);
    expect(run.err()).toContain("the fleet demo needs a Redis: set RENDERGUARD_REDIS_URL to one (redis://host:port), or put redis-server on the PATH");
  });

  it("refuses --metrics-port with --fleet", async () => {
    const run = runCli(["demo", "--fleet", "--metrics-port", "0", "--out", join(workdir(), "demo")], {});
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain("--fleet has no metrics of its own");
  });
});
