import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { type Job, Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { RenderClientOptions } from "../../src/client.js";
import { fleetOutcomes } from "../../src/fleet/outcomes.js";
import { enqueueRenders, type RenderJobData, type RenderJobResult, renderJobId } from "../../src/fleet/index.js";
import { type LedgerEntry, type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import type { Scenario } from "../../src/server/scenario.js";
import { redisAvailable, sharedRedis, uniquePrefix } from "../support/redis.js";
import { mulberry32 } from "../simulation/prng.js";
import { tempDir } from "../support/temp-dir.js";
import { byBody, expectNoResendBeforeRetryAfter } from "./support.js";

// Three worker processes of benchmarks/bullmq-worker.js (createRenderWorker from dist/fleet; `npm
// test` builds first) on one queue, against the reference server over loopback and a real Redis.
// Every assertion reads the server's ledger or the queue's jobs, never the wall clock.

const workerScript = fileURLToPath(new URL("../../benchmarks/bullmq-worker.js", import.meta.url));
const CONCURRENCY = 4;
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
/** sha256 of the body the client sends for a document, as the ledger keeps it. */
const bodyOf = (html: string) => sha256(JSON.stringify({ html }));
const codes = new Set(Object.keys(fleetOutcomes));


/** Workers still running: a test that fails midway leaves none behind. */
const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) child.kill("SIGKILL");
});

interface FleetWorker {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  /** Resolves once the process has exited and its output is read. */
  readonly exited: Promise<void>;
  /** Jobs it printed `active` for and not `completed` or `failed` after. */
  inFlight(): string[];
}

interface WorkerOptions {
  readonly queue: string;
  readonly redisUrl: string;
  readonly keyPrefix: string;
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly out: string;
  readonly clientOptions?: Partial<RenderClientOptions>;
  readonly lockDuration?: number;
  readonly stalledInterval?: number;
}

function startWorker(options: WorkerOptions): FleetWorker {
  const child = spawn(process.execPath, [workerScript, JSON.stringify({ ...options, concurrency: CONCURRENCY, trace: true })], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  running.add(child);
  const last = new Map<string, string>();
  let pending = "";
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    onReady = resolve;
  });
  child.stdout?.on("data", (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      if (line === "ready") onReady();
      const [event, id] = line.split(" ");
      if (id !== undefined && (event === "active" || event === "completed" || event === "failed")) last.set(id, event);
    }
  });
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  void exited.then(() => running.delete(child));
  const readyOrExit = Promise.race([ready, exited.then(() => Promise.reject(new Error("bullmq worker exited before it was ready")))]);
  readyOrExit.catch(() => {}); // a worker killed by the test: the test awaits `ready` where it matters
  return {
    child,
    ready: readyOrExit,
    exited,
    inFlight: () => [...last].filter(([, event]) => event === "active").map(([id]) => id),
  };
}

/** Resolves once `check` holds, polling every `every` ms; fails after `ms`. */
async function until(check: () => boolean | Promise<boolean>, ms: number, what: string | (() => Promise<string>), every = 20) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === "string" ? what : await what()}`);
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}

const renders = (server: ReferenceServer): LedgerEntry[] => server.ledger.entries().filter((e) => e.path === "/v1/render");

describe.skipIf(!redisAvailable)("a BullMQ fleet of three worker processes on the reference server", () => {
  let redis: { url: string; stop(): Promise<void> };
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(() => redis?.stop());

  /** A server, a queue and a limiter prefix of this test's own, and an output folder; `close` ends them all. */
  async function setup(scenario: Scenario, seed: number) {
    const server = await startReferenceServer({ scenario, seed });
    const name = uniquePrefix("bullmq-e2e").replaceAll(":", "-");
    const queue = new Queue<RenderJobData, RenderJobResult>(name, { connection: { url: redis.url } });
    const keyPrefix = uniquePrefix("bullmq-e2e-limiter");
    const options = { queue: name, redisUrl: redis.url, keyPrefix, baseUrl: server.url, apiKey: server.apiKey, out: tempDir("renderguard-bullmq-e2e-") };
    const close = async () => {
      for (const child of running) child.kill("SIGKILL");
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
      const keys = new Redis(redis.url, { lazyConnect: true });
      await keys.del(`{${keyPrefix}}:state`, `{${keyPrefix}}:leases`).catch(() => {});
      keys.disconnect();
      await server.close();
    };
    return { server, queue, options, close };
  }

  /** Every job by state, and the ones not in a final state; asserts that none is lost. */
  async function jobsByState(queue: Queue<RenderJobData, RenderJobResult>, total: number) {
    const found = await queue.getJobCounts("completed", "failed", "waiting", "delayed", "active", "prioritized", "waiting-children");
    const counts = { completed: 0, failed: 0, waiting: 0, delayed: 0, active: 0, prioritized: 0, "waiting-children": 0, ...found };
    const sum = Object.values(counts).reduce((a, b) => a + b, 0);
    expect(sum, JSON.stringify(counts)).toBe(total);
    return counts;
  }

  /** Failed jobs each name a renderguard code first; returns them by code. */
  async function failedByCode(queue: Queue<RenderJobData, RenderJobResult>) {
    const failed: Job<RenderJobData, RenderJobResult>[] = await queue.getJobs(["failed"]);
    const byCode: Record<string, string[]> = {};
    for (const job of failed) {
      const code = job.failedReason.split(/[\s:]/)[0] ?? "";
      expect(codes.has(code), `job ${job.id} failed without a code: ${job.failedReason}`).toBe(true);
      (byCode[code] ??= []).push(job.data.id);
    }
    return byCode;
  }

  it("renders 3,000 jobs under a 200/s limit, scattered faults and a quota: each billed once, no resend early, one probe at a time at the quota", async () => {
    const jobs = 3_000;
    const quota = { renders: 2_400, periodMs: 60 * 60 * 1000 };
    const scenario: Scenario = {
      rateLimit: { ratePerSecond: 200, burst: 20 },
      quota,
      renderDelayMs: 2,
      renderJitterMs: 6,
      renderTimeoutMs: 150,
      faults: [
        { fault: "internal_error", probability: 0.02 },
        { fault: "drop", probability: 0.003 },
      ],
    };
    const { server, queue, options, close } = await setup(scenario, 40);
    // When each answer left: the ledger keeps arrivals, and records an entry as its answer is written.
    const answeredAt = new Map<number, number>();
    const record = server.ledger.record.bind(server.ledger);
    vi.spyOn(server.ledger, "record").mockImplementation((entry) => {
      answeredAt.set(entry.seq, Date.now());
      record(entry);
    });
    try {
      // Every 50th page never renders in time (408) and every 50th fails to render (422, billed);
      // the rest are renderable, until the quota (an hour's) runs out.
      const kindOf = (i: number) => (i % 50 === 7 ? "timeout" : i % 50 === 31 ? "fail" : "ok");
      const marker = { timeout: "<!-- render:timeout -->", fail: "<!-- render:fail -->", ok: "" };
      const docs = Array.from({ length: jobs }, (_, i) => ({ id: `doc-${i}`, html: `<h1>document ${i}</h1>${marker[kindOf(i)]}`, kind: kindOf(i) }));
      // The client waits out a rate limit's Retry-After (whole seconds) itself, and no more than 2 s
      // of a spent quota: the hour is the queue's to wait (queue.rateLimit), every worker holding off.
      const clientOptions = { retry: { maxRetryAfter: 2_000 }, limiter: { maxWait: 2_000 } };
      const fleet = Array.from({ length: 3 }, () => startWorker({ ...options, clientOptions }));
      await Promise.all(fleet.map((w) => w.ready));
      await enqueueRenders(
        queue,
        docs.map(({ id, html }) => ({ id, html })),
      );
      const billed = () => renders(server).filter((e) => e.billed).length;
      // Done: the quota spent, the queue held for it, nothing running or due to run.
      await until(
        async () => {
          if (billed() < quota.renders) return false;
          const counts = await queue.getJobCounts("active", "delayed");
          return counts.active === 0 && counts.delayed === 0 && (await queue.getRateLimitTtl()) > 60_000;
        },
        80_000,
        async () => `the fleet to stop on the quota: ${billed()} billed, ${JSON.stringify(await queue.getJobCounts())}, rate limit ttl ${await queue.getRateLimitTtl()}`,
      );

      const counts = await jobsByState(queue, jobs);
      expect(counts.active).toBe(0);
      const failed = await failedByCode(queue);
      const waiting = new Set((await queue.getJobs(["waiting", "prioritized"])).map((job) => job.data.id));
      const completed = new Set((await queue.getJobs(["completed"])).map((job) => job.data.id));
      expect(counts.completed + counts.failed + waiting.size).toBe(jobs);
      const sends = byBody(server.ledger);
      const billedOf = (html: string) => (sends.get(bodyOf(html)) ?? []).filter((e) => e.billed).length;
      // No document billed twice, and the quota spent exactly.
      for (const [, entries] of sends) expect(entries.filter((e) => e.billed).length).toBeLessThanOrEqual(1);
      expect(billed()).toBe(quota.renders);
      const lostToDrop = new Set(failed.response_lost ?? []);
      for (const doc of docs) {
        const entries = sends.get(bodyOf(doc.html)) ?? [];
        if (waiting.has(doc.id)) {
          // Held for the quota: never billed, back in the queue for the next period.
          expect(billedOf(doc.html), doc.id).toBe(0);
        } else if (lostToDrop.has(doc.id)) {
          // A connection the network fault reset as it arrived: the client cannot tell it was not
          // billed (response_lost), and BullMQ does not resend it; the ledger says it was free.
          expect(billedOf(doc.html), doc.id).toBe(0);
          expect(entries.at(-1), doc.id).toMatchObject({ outcome: "reset", billed: false });
        } else if (doc.kind === "ok") {
          expect(completed.has(doc.id), doc.id).toBe(true);
          expect(billedOf(doc.html), doc.id).toBe(1);
          expect(entries.at(-1)?.outcome, doc.id).toBe("rendered");
        } else if (doc.kind === "fail") {
          expect(failed.render_failed, doc.id).toContain(doc.id);
          expect(billedOf(doc.html), doc.id).toBe(1);
          expect(entries.filter((e) => e.code === "render_failed"), doc.id).toHaveLength(1);
        } else {
          expect(failed.render_timeout, doc.id).toContain(doc.id);
          expect(billedOf(doc.html), doc.id).toBe(0);
          expect(entries.at(-1)?.code, doc.id).toBe("render_timeout");
        }
      }
      // Nothing else failed: internal_error and 429s were waited out, not failed.
      expect(Object.keys(failed).sort()).toEqual(["render_failed", "render_timeout", ...(lostToDrop.size ? ["response_lost"] : [])].sort());

      const ledger = renders(server);
      const limited = ledger.filter((e) => e.code === "rate_limited").length;
      const quotaOut = ledger.filter((e) => e.code === "quota_exceeded");
      // No resend of a body before the Retry-After its 429 gave (rate_limited and quota_exceeded):
      // the server writes Retry-After rounded up to whole seconds, the client counts it from when the
      // answer came, after the arrival, and the ledger and the workers read the same clock
      // (Date.now(), whole ms, one machine): no tolerance is needed, and none is given.
      const checked = expectNoResendBeforeRetryAfter(sends);
      // The quota ran out at the arrival of the send that took its last render. From then on the fleet
      // sends probes only, one at a time, each arriving after the answer before it left the server (the
      // first after that render's own: a send dispatched before the fleet could know the quota was
      // spent never arrives after it, as every send in flight holds one of the renders left). Each
      // probe but the last got an answer decided before the quota is looked at (handler.ts: a reset,
      // internal_error, rate_limited), which says nothing of when renders come back, so another probe
      // follows it; the last is the one quota_exceeded, and after it nothing at all. A probe sent while
      // another send was out, or after the quota_exceeded, fails here.
      const spentAt = ledger.filter((e) => e.billed).sort((a, b) => a.at - b.at)[quota.renders - 1]!;
      const afterSpent = ledger.filter((e) => e.seq !== spentAt.seq && e.at > spentAt.at && !e.billed).sort((a, b) => a.at - b.at || a.seq - b.seq);
      // The fleet's 429s are printed, not asserted: they miss the 3 % as the send-rate
      // learner's targets do (issue 35); benchmarks/bullmq-fleet.bench.js judges them.
      console.log(
        `bullmq e2e quota run: ${jobs} jobs, ${ledger.length} sends, ${billed()} billed, 429 rate_limited ${limited} = ${((100 * limited) / jobs).toFixed(2)} % of jobs, ` +
          `quota_exceeded ${quotaOut.length}, sends after the quota ran out ${afterSpent.length}, ${checked} resends after a 429 checked`,
      );
      expect(quotaOut.length).toBeLessThanOrEqual(1);
      const probes = JSON.stringify(
        afterSpent.map((e) => ({ code: e.code ?? e.outcome, status: e.status, at: e.at - spentAt.at, answered: (answeredAt.get(e.seq) ?? NaN) - spentAt.at })),
      );
      const message = `sends after the quota ran out (ms after the arrival of its last billed render, answered ${(answeredAt.get(spentAt.seq) ?? NaN) - spentAt.at}): ${probes}`;
      let previous = spentAt;
      for (const probe of afterSpent) {
        expect(probe.at, `a send while another was out, ${message}`).toBeGreaterThanOrEqual(answeredAt.get(previous.seq)!);
        previous = probe;
      }
      const saidNothingOfTheQuota = (e: LedgerEntry) => e.outcome === "reset" || e.code === "internal_error" || e.code === "rate_limited";
      expect(afterSpent.slice(0, -1).filter((e) => !saidNothingOfTheQuota(e)), message).toEqual([]);
      if (afterSpent.length > 0) expect(afterSpent.at(-1)?.code, message).toBe("quota_exceeded");
      if (quotaOut[0]) expect(ledger.filter((e) => e.at > quotaOut[0]!.at)).toEqual([]);
      expect(waiting.size).toBeGreaterThan(0);
    } finally {
      await close();
    }
  }, 90_000);

  it("loses no job and bills at most the killed worker's renders in flight twice, over 10 SIGKILLs at seeded moments", async () => {
    const jobs = 1_500;
    const kills = 10;
    const t0 = Date.now();
    const { server, queue, options, close } = await setup({ renderDelayMs: 2, renderJitterMs: 6 }, 1);
    try {
      const docs = Array.from({ length: jobs }, (_, i) => ({ id: `doc-${i}`, html: `<h1>document ${i}</h1>` }));
      const htmlOf = new Map(docs.map((doc) => [renderJobId(doc), doc.html]));
      // A dead worker's jobs go back to wait once their 3 s lock lapses and a stall check (every
      // second) finds it; a lock that short is still renewed every 1.5 s under a loaded machine.
      const locked = { ...options, lockDuration: 3_000, stalledInterval: 1_000 };
      const fleet = Array.from({ length: 3 }, () => startWorker(locked));
      await Promise.all(fleet.map((w) => w.ready));
      // Kill k (seed k): which worker, and when, as the count of billed renders the ledger holds
      // (a moment of the batch, not of the wall clock).
      const plan = Array.from({ length: kills }, (_, k) => {
        const random = mulberry32(k + 1);
        return { seed: k + 1, victim: Math.floor(random() * 3), atBilled: 50 + Math.floor(random() * 1_150), thenMs: Math.floor(random() * 20) };
      }).sort((a, b) => a.atBilled - b.atBilled);
      await enqueueRenders(queue, docs);
      const billed = () => renders(server).filter((e) => e.billed).length;
      const billedIn = (sends: ReturnType<typeof byBody>, jobId: string) =>
        (sends.get(bodyOf(htmlOf.get(jobId)!)) ?? []).filter((e) => e.billed).length;
      const done: { seed: number; inFlight: string[]; stored: Map<string, number>; killedAt: number }[] = [];
      for (const kill of plan) {
        const dying = fleet[kill.victim]!;
        await dying.ready;
        await until(() => billed() >= kill.atBilled, 30_000, `${kill.atBilled} billed renders`, 2);
        // A ledger entry is written as its answer leaves: a kill at once would find the worker
        // mostly just past its sends. The seed's 0-19 ms more scatters the moment over a job's life.
        await new Promise((resolve) => setTimeout(resolve, kill.thenMs));
        // Mid-batch: a worker with something in flight (a replacement just started may have none yet).
        await until(() => dying.inFlight().length > 0, 10_000, "the worker to take a job", 1);
        dying.child.kill("SIGKILL");
        await dying.exited;
        const inFlight = dying.inFlight();
        // What it had stored and recorded (`rendered`) but not completed: still active, its job
        // data read while no worker can take it (its lock is the dead worker's). A job whose
        // completion reached Redis before the kill, its line unprinted, is not among them.
        // Each with the renders billed for it so far: two if an earlier kill had it in flight.
        const stored = new Map<string, number>();
        const sendsAtKill = byBody(server.ledger);
        for (const id of inFlight) {
          const job = await queue.getJob(id);
          if (job?.data.rendered && (await job.getState()) === "active") stored.set(id, billedIn(sendsAtKill, id));
        }
        done.push({ seed: kill.seed, inFlight, stored, killedAt: billed() });
        fleet[kill.victim] = startWorker(locked);
      }
      await Promise.all(fleet.map((w) => w.ready));
      await until(
        async () => {
          const { completed = 0, failed = 0 } = await queue.getJobCounts("completed", "failed");
          return completed + failed >= jobs;
        },
        30_000,
        async () => `every job done: ${JSON.stringify(await queue.getJobCounts())}`,
      );

      const counts = await jobsByState(queue, jobs);
      const stalledTwice: Job<RenderJobData, RenderJobResult>[] = await queue.getJobs(["failed"]);
      const sends = byBody(server.ledger);
      const billedOf = (jobId: string) => billedIn(sends, jobId);
      const twice = [...htmlOf.keys()].filter((id) => billedOf(id) > 1);
      const perKill = done.map(({ seed, inFlight, stored }) => ({
        seed,
        inFlight: inFlight.length,
        stored: stored.size,
        billedTwice: inFlight.filter((id) => billedOf(id) > 1).length,
      }));
      const completedJobs: Job<RenderJobData, RenderJobResult>[] = await queue.getJobs(["completed"]);
      const notSentAgain = completedJobs.filter((job) => job.returnvalue.attempts === 0).length;
      console.log(
        `bullmq e2e kills: ${jobs} jobs, ${kills} kills, ${JSON.stringify(counts)}, ` +
          `billed twice ${twice.length}, per kill ${JSON.stringify(perKill)}, completed without a send (rendered before the kill) ${notSentAgain}, ${Date.now() - t0} ms`,
      );
      // Every job completed, but one that two kills caught: BullMQ fails a job that stalls a second
      // time (maxStalledCount 1) rather than let it be billed a third time.
      for (const job of stalledTwice) expect(job.failedReason, job.id).toBe("job stalled more than allowable limit");
      expect(counts.completed + stalledTwice.length).toBe(jobs);
      // Billed twice: only what a killed worker had in flight, at most its concurrency a kill, and never thrice.
      const killedInFlight = new Set(done.flatMap((d) => d.inFlight));
      for (const id of twice) {
        expect(killedInFlight.has(id), `${id} billed twice, not in flight in a killed worker`).toBe(true);
        expect(billedOf(id)).toBe(2);
      }
      for (const kill of perKill) {
        expect(kill.inFlight).toBeLessThanOrEqual(CONCURRENCY);
        expect(kill.billedTwice).toBeLessThanOrEqual(CONCURRENCY);
      }
      // A job whose render was stored and recorded before the kill is not rendered again: it
      // completes without a send, or, caught by a second kill as well, fails stalled (above).
      const failedStalled = new Set(stalledTwice.map((job) => job.id));
      for (const [id, billedAtKill] of done.flatMap((d) => [...d.stored])) {
        expect(billedOf(id), `${id} rendered and recorded before the kill`).toBe(billedAtKill);
        if (failedStalled.has(id)) continue;
        const job = await queue.getJob(id);
        expect(job?.returnvalue?.attempts, `${id}: ${await job?.getState()} ${job?.failedReason ?? ""}`).toBe(0);
      }
      for (const job of completedJobs) expect(billedOf(job.id!), job.id).toBeGreaterThanOrEqual(1);
    } finally {
      await close();
    }
  }, 60_000);
});
