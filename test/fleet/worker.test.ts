import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Job, Queue, type Worker } from "bullmq";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { RenderClientOptions } from "../../src/client.js";
import { createRenderWorker, enqueueRenders, type RenderJobData, type RenderJobResult } from "../../src/fleet/index.js";
import type { Scenario } from "../../src/server/scenario.js";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { byBody } from "../e2e/support.js";
import { redisAvailable, sharedRedis, uniquePrefix } from "../support/redis.js";
import { tempDir } from "../support/temp-dir.js";

const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");
/** sha256 of the body the client sends for a job, as the server's ledger keeps it. */
const bodyOf = ({ id: _id, ...request }: { id: string; html: string }) => sha256(JSON.stringify(request));
const docs = (count: number, from = 0) => Array.from({ length: count }, (_, i) => ({ id: `doc-${from + i}`, html: `<h1>document ${from + i}</h1>` }));

describe.skipIf(!redisAvailable)("createRenderWorker on a real Redis and the reference server", () => {
  let redis: { url: string; stop(): Promise<void> };
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(() => redis?.stop());

  /** A reference server, a queue of a name no other test uses, and an output folder, all closed when the test ends. */
  async function setup(scenario: Scenario = {}) {
    const server = await startReferenceServer({ scenario });
    const queue = new Queue<RenderJobData, RenderJobResult>(uniquePrefix("fleet").replaceAll(":", "-"), { connection: { url: redis.url } });
    const out = tempDir("renderguard-fleet-");
    const workers: Worker[] = [];
    onTestFinished(async () => {
      await Promise.all(workers.map((w) => w.close(true)));
      await queue.obliterate({ force: true });
      await queue.close();
      await server.close();
    });
    const start = (clientOptions: Partial<RenderClientOptions> = {}, extra: { concurrency?: number; output?: string; lockDuration?: number; stalledInterval?: number } = {}) => {
      const worker = createRenderWorker({
        queue: queue.name,
        connection: redis.url,
        clientOptions: { baseUrl: server.url, apiKey: server.apiKey, ...clientOptions },
        output: out,
        ...extra,
      });
      workers.push(worker);
      return worker;
    };
    return { server, queue, out, start };
  }

  /** Resolves once `check` holds, polling; fails after `ms`. */
  async function until(check: () => Promise<boolean>, ms = 10_000) {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error("timed out waiting");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  const counted = (queue: Queue, state: "completed" | "failed", n: number) => async () => (await queue.getJobCounts(state))[state] === n;

  /** Each document's billed renders on the server, by document id. */
  function billedById(server: ReferenceServer, jobs: { id: string; html: string }[]) {
    const sends = byBody(server.ledger);
    return Object.fromEntries(jobs.map((job) => [job.id, (sends.get(bodyOf(job)) ?? []).filter((e) => e.billed).length]));
  }

  it("hands BullMQ the lock and stall check it is given, and its defaults otherwise", async () => {
    const { start } = await setup();
    expect(start().opts).toMatchObject({ lockDuration: 30_000, stalledInterval: 30_000 });
    expect(start({}, { lockDuration: 2_000, stalledInterval: 500 }).opts).toMatchObject({ lockDuration: 2_000, stalledInterval: 500 });
  });

  it("renders every job exactly once, writes <id>.pdf and records it in the job", async () => {
    const { server, queue, out, start } = await setup();
    const jobs = docs(20);
    expect(await enqueueRenders(queue, jobs)).toEqual({ added: 20, existing: 0 });
    start();
    await until(counted(queue, "completed", 20));
    expect(billedById(server, jobs)).toEqual(Object.fromEntries(jobs.map((job) => [job.id, 1])));
    expect(server.ledger.billedCount()).toBe(20);
    for (const job of await queue.getJobs(["completed"])) {
      const path = join(out, `${job.data.id}.pdf`);
      expect(job.returnvalue).toEqual({ path, billed: true, attempts: 1 });
      expect(job.data.rendered).toEqual({ path, sha256: sha256(readFileSync(path)) });
    }
  }, 20_000);

  it("adds nothing when the same input is enqueued again, and only a changed document renders again", async () => {
    const { server, queue, start } = await setup();
    const jobs = docs(5);
    await enqueueRenders(queue, jobs);
    start();
    await until(counted(queue, "completed", 5));
    expect(await enqueueRenders(queue, jobs)).toEqual({ added: 0, existing: 5 });
    const changed = jobs.map((job) => (job.id === "doc-2" ? { ...job, html: "<h1>document 2, revised</h1>" } : job));
    expect(await enqueueRenders(queue, changed)).toEqual({ added: 1, existing: 4 });
    await until(counted(queue, "completed", 6));
    expect(billedById(server, [...jobs, changed[2] as (typeof jobs)[number]])).toEqual({ "doc-0": 1, "doc-1": 1, "doc-2": 1, "doc-3": 1, "doc-4": 1 });
    expect(server.ledger.billedCount()).toBe(6);
  }, 20_000);

  it("renders a document changed back to an earlier version again, so its file is the last version", async () => {
    const { server, queue, out, start } = await setup();
    const first = { id: "doc-0", html: "<h1>version A</h1>" };
    const second = { id: "doc-0", html: "<h1>version B</h1>" };
    start();
    for (const [n, version] of [first, second, first].entries()) {
      expect(await enqueueRenders(queue, [version]), `enqueue ${n + 1}`).toEqual({ added: 1, existing: 0 });
      await until(counted(queue, "completed", n === 2 ? 2 : n + 1));
      await until(async () => server.ledger.billedCount() === n + 1);
    }
    expect(await enqueueRenders(queue, [first])).toEqual({ added: 0, existing: 1 });
    expect(readFileSync(join(out, "doc-0.pdf"), "latin1")).toContain("version A");
    expect(billedById(server, [first])).toEqual({ "doc-0": 2 });
  }, 20_000);

  it("drops a version still waiting when a newer one is enqueued: it is never sent", async () => {
    const { server, queue, out, start } = await setup();
    await enqueueRenders(queue, [{ id: "doc-0", html: "<h1>version A</h1>" }]);
    expect(await enqueueRenders(queue, [{ id: "doc-0", html: "<h1>version B</h1>" }])).toEqual({ added: 1, existing: 0 });
    start();
    await until(counted(queue, "completed", 1));
    expect(await queue.getJobCounts("waiting", "completed")).toMatchObject({ waiting: 0, completed: 1 });
    expect(server.ledger.billedCount()).toBe(1);
    expect(readFileSync(join(out, "doc-0.pdf"), "latin1")).toContain("version B");
  }, 20_000);

  it("pauses the queue on a rejected key (401) and keeps every job, none failed", async () => {
    const { server, queue, start } = await setup();
    await enqueueRenders(queue, docs(3));
    start({ apiKey: server.keys.revoked as string }, { concurrency: 1 });
    await until(() => queue.isPaused());
    await until(async () => (await queue.getJobCounts("active")).active === 0);
    expect(await queue.getJobCounts("wait", "completed", "failed")).toEqual({ wait: 3, completed: 0, failed: 0 });
    // One send learned it; the client, halted, sent nothing more.
    expect(server.ledger.count({ code: "invalid_api_key" })).toBe(1);
    const waiting = await queue.getJobs(["wait"]);
    const logs = await Promise.all(waiting.map(async (job) => (await queue.getJobLogs(job.id as string)).logs));
    expect(logs.flat()).toContainEqual(expect.stringMatching(/^Queue paused: invalid_api_key \(401\): /));
    for (const job of waiting) expect(job.attemptsMade).toBe(0);
  }, 20_000);

  it("fails a render_failed job for good, with its code, sent once", async () => {
    const { server, queue, start } = await setup({ faults: [{ fault: "render_failed" }] });
    const jobs = docs(1);
    await enqueueRenders(queue, jobs);
    start();
    await until(counted(queue, "failed", 1));
    const [job] = await queue.getJobs(["failed"]);
    expect(job?.failedReason).toMatch(/^render_failed \(422\): /);
    expect(job?.attemptsMade).toBe(1);
    // BullMQ would have retried within its first backoff (5 s) had the job not failed for good.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(server.ledger.count({ bodySha256: bodyOf(jobs[0] as (typeof jobs)[number]) })).toBe(1);
  }, 20_000);

  it("rate-limits the whole queue on a spent quota, spends no attempt on the wait, and resumes after it", async () => {
    const { server, queue, start } = await setup({ quota: { renders: 2, periodMs: 2_000 } });
    const jobs = docs(5);
    await enqueueRenders(queue, jobs);
    // The client waits out no more than 200 ms itself: the quota's 2 s is the fleet's to wait.
    start({ retry: { maxRetryAfter: 200 }, limiter: { maxWait: 200 } }, { concurrency: 1 });
    await until(async () => (await queue.getRateLimitTtl()) > 0, 5_000);
    expect(await queue.getRateLimitTtl()).toBeGreaterThan(500);
    await until(counted(queue, "completed", 5), 15_000);
    expect(billedById(server, jobs)).toEqual(Object.fromEntries(jobs.map((job) => [job.id, 1])));
    const done: Job[] = await queue.getJobs(["completed"]);
    for (const job of done) expect(job.attemptsMade).toBe(1);
    // Held back at least once, and sent back to wait rather than failed: started more often than made.
    expect(done.some((job) => (job.attemptsStarted ?? 0) > job.attemptsMade)).toBe(true);
    // The queue waited out each period's end: no job was taken up again before it, and at most one
    // send a period learned that the quota was spent.
    expect(Math.max(...done.map((job) => job.attemptsStarted ?? 0))).toBeLessThanOrEqual(2);
    expect(server.ledger.count({ status: 429 })).toBeLessThanOrEqual(2);
  }, 30_000);

  it("takes no job while another worker holds the queue rate-limited", async () => {
    const { server, queue, start } = await setup();
    await enqueueRenders(queue, docs(2));
    await queue.rateLimit(1_000);
    start();
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(server.ledger.length).toBe(0);
    await until(counted(queue, "completed", 2));
  }, 20_000);

  it("returns a job recorded as rendered without rendering it again, when its file is there as recorded", async () => {
    const { server, queue, out, start } = await setup();
    const path = join(out, "kept.pdf");
    writeFileSync(path, "%PDF-1.4 kept");
    const record = { path, sha256: sha256("%PDF-1.4 kept") };
    await queue.add("render", { id: "kept", html: "<p>kept</p>", rendered: record }, { jobId: "kept-1" });
    await queue.add("render", { id: "gone", html: "<p>gone</p>", rendered: { path: join(out, "gone.pdf"), sha256: record.sha256 } }, { jobId: "gone-1" });
    start();
    await until(counted(queue, "completed", 1));
    await until(counted(queue, "failed", 1));
    expect((await queue.getJob("kept-1"))?.returnvalue).toEqual({ path, billed: true, attempts: 0 });
    expect((await queue.getJob("gone-1"))?.failedReason).toMatch(/^output_missing: /);
    expect(server.ledger.length).toBe(0);
  }, 20_000);

  it("fails a job whose id would name a file outside the folder, unsent", async () => {
    const { server, queue, start } = await setup();
    await queue.add("render", { id: "../escape", html: "<p>x</p>" }, { jobId: "escape-1" });
    start();
    await until(counted(queue, "failed", 1));
    expect((await queue.getJob("escape-1"))?.failedReason).toMatch(/^invalid_request: /);
    expect(server.ledger.length).toBe(0);
  }, 20_000);

  it("stops taking jobs once its spend cap is reached, leaving the rest waiting", async () => {
    const { server, queue, start } = await setup();
    await enqueueRenders(queue, docs(3));
    const worker = start({ maxBilledRenders: 1 }, { concurrency: 1 });
    await until(counted(queue, "completed", 1));
    await until(async () => worker.isPaused() && (await queue.getJobCounts("active")).active === 0);
    expect(await queue.getJobCounts("wait", "failed")).toEqual({ wait: 2, failed: 0 });
    expect(server.ledger.billedCount()).toBe(1);
  }, 20_000);
});
