import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { redisAvailable, sharedRedis, startRedis, uniquePrefix } from "../support/redis.js";
import { byBody, expectNoResendBeforeRetryAfter } from "./support.js";

const worker = fileURLToPath(new URL("../support/fleet-worker.mjs", import.meta.url));
const hour = 60 * 60 * 1000;

/** Workers still running: a test that fails midway leaves none behind. */
const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) child.kill("SIGKILL");
});

interface WorkerReport {
  readonly rendered: number;
  readonly failed: Record<string, number>;
  readonly degraded: number;
  readonly wallMs: number;
}

interface FleetWorker {
  readonly child: ChildProcess;
  readonly done: Promise<WorkerReport>;
}

/** Starts one worker process of the fleet on jobs `from` to `to`. */
function startWorker(server: ReferenceServer, redisUrl: string, keyPrefix: string, range: { from: number; to: number }, extra = {}): FleetWorker {
  const options = { baseUrl: server.url, apiKey: server.apiKey, redisUrl, keyPrefix, ...range, ...extra };
  const child = spawn(process.execPath, [worker, JSON.stringify(options)], { stdio: ["ignore", "pipe", "inherit"] });
  running.add(child);
  child.once("exit", () => running.delete(child));
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const done = new Promise<WorkerReport>((resolve, reject) => {
    child.once("exit", (code, signal) => {
      if (code === 0) resolve(JSON.parse(output.trim().split("\n").at(-1) ?? "{}") as WorkerReport);
      else reject(new Error(`fleet worker exited with ${code ?? signal}: ${output}`));
    });
  });
  done.catch(() => {}); // a killed worker's rejection is expected by the test that kills it
  return { child, done };
}

/** `workers` processes sharing `jobs` jobs evenly, started together; their reports and the wall time. */
async function runFleet(server: ReferenceServer, redisUrl: string, keyPrefix: string, workers: number, jobs: number) {
  const t0 = Date.now();
  const per = jobs / workers;
  const fleet = Array.from({ length: workers }, (_, i) => startWorker(server, redisUrl, keyPrefix, { from: i * per, to: (i + 1) * per }));
  const reports = await Promise.all(fleet.map((w) => w.done));
  return { reports, wallMs: Date.now() - t0 };
}

describe.skipIf(!redisAvailable)("a fleet of processes sharing one Redis store", () => {
  let redis: { url: string; stop(): Promise<void> };
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(() => redis?.stop());

  it("spends a quota of 150 exactly, then sends nothing more, every worker done within 10 s", async () => {
    const server = await startReferenceServer({ scenario: { quota: { renders: 150, periodMs: hour } } });
    try {
      const { reports } = await runFleet(server, redis.url, uniquePrefix("fleet-quota"), 3, 300);
      const billed = server.ledger.entries().filter((e) => e.billed).length;
      expect(billed).toBe(150);
      expect(reports.reduce((sum, r) => sum + r.rendered, 0)).toBe(150);
      // The fleet knows from X-Renders-Remaining when the quota is spent: at most one send learns it.
      expect(server.ledger.entries().filter((e) => e.status === 429).length).toBeLessThanOrEqual(1);
      for (const report of reports) expect(report.wallMs).toBeLessThan(10_000);
    } finally {
      await server.close();
    }
  }, 30_000);

  it("keeps one rate limit of 200/s for the fleet: few 429s, no resend before its Retry-After", async () => {
    const rateLimit = { ratePerSecond: 200, burst: 20 };
    const server = await startReferenceServer({ scenario: { rateLimit, renderDelayMs: 2 } });
    try {
      const jobs = 2_100;
      const { reports } = await runFleet(server, redis.url, uniquePrefix("fleet-rate"), 3, jobs);
      expect(reports.reduce((sum, r) => sum + r.rendered, 0)).toBe(jobs);
      const entries = server.ledger.entries();
      const limited = entries.filter((e) => e.status === 429).length;
      // This guards against a fleet that goes on sending into the limit (a CI run once met 310 429s,
      // 15 %, before the fleet kept one pace): half that fails it. The target, at most 3 % in every
      // run, is the fleet benchmark's to judge over 20 runs (benchmarks/fleet.bench.js).
      expect(limited).toBeLessThanOrEqual(0.075 * jobs);
      expectNoResendBeforeRetryAfter(byBody(server.ledger));
    } finally {
      await server.close();
    }
  }, 60_000);

  it("gets a killed worker's slots back within its lease", async () => {
    const server = await startReferenceServer({ scenario: { renderDelayMs: 3_000 } });
    const keyPrefix = uniquePrefix("fleet-kill");
    const leases = `{${keyPrefix}}:leases`;
    const inspect = new Redis(redis.url);
    const live = () => inspect.zcount(leases, Date.now(), "+inf"); // unexpired, whether or not pruned yet
    try {
      const dying = startWorker(server, redis.url, keyPrefix, { from: 0, to: 4 }, { concurrency: 4, leaseMs: 1_000 });
      await expect.poll(live, { timeout: 5_000 }).toBe(4);
      dying.child.kill("SIGKILL");
      const killedAt = Date.now();
      // No renewals: its four slots run out within the lease, while the service still renders them.
      await expect.poll(live, { timeout: 3_000, interval: 50 }).toBe(0);
      expect(Date.now() - killedAt).toBeLessThanOrEqual(1_000 + 200);
      const survivor = startWorker(server, redis.url, keyPrefix, { from: 4, to: 8 }, { concurrency: 4, leaseMs: 1_000 });
      expect((await survivor.done).rendered).toBe(4);
      expect(await inspect.zcard(leases)).toBe(0); // its acquires pruned the dead slots; its releases gave back its own
    } finally {
      inspect.disconnect();
      await server.close();
    }
  }, 30_000);

  it("finishes every job when Redis stops mid-batch, and shares state again when it is back", async () => {
    const own = await startRedis();
    const server = await startReferenceServer({ scenario: { rateLimit: { ratePerSecond: 300, burst: 20 }, renderDelayMs: 2 } });
    const keyPrefix = uniquePrefix("fleet-away");
    const inspect = new Redis(own.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      const fleet = [0, 1, 2].map((i) => startWorker(server, own.url, keyPrefix, { from: i * 400, to: (i + 1) * 400 }));
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await own.stop();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await own.start(); // empty: the fleet writes its record anew
      await inspect.connect();
      await expect.poll(() => inspect.hget(`{${keyPrefix}}:state`, "record"), { timeout: 5_000, interval: 100 }).not.toBeNull();
      const reports = await Promise.all(fleet.map((w) => w.done));
      expect(reports.reduce((sum, r) => sum + r.rendered, 0)).toBe(1_200);
      expect(reports.every((r) => r.degraded >= 1)).toBe(true);
    } finally {
      inspect.disconnect();
      await server.close();
      await own.stop();
    }
  }, 60_000);
});
