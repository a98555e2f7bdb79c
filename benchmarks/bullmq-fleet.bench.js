// BullMQ fleet (issue 40): 1, 2 and 3 worker processes (benchmarks/bullmq-worker.js:
// createRenderWorker from dist/fleet, 4 jobs at once each, limiter state in Redis) on one queue,
// against the reference server with renders of 200 ms. Each run has a fresh server, queue and key
// prefix, its workers started and ready before enqueueRenders adds its jobs.
// - High limit (1000/s, never reached): 25 waves of jobs per worker (100 a worker), so every run
//   takes the same ideal time and the workers' start and last wave weigh alike. Throughput from the
//   server's ledger: jobs / (first arrival to last, plus one render). A worker's ceiling is 4 / 200
//   ms = 20 jobs/s, and nothing the workers share (one Redis, one server) is near its own, so the
//   ideal is linear; the targets leave 10 % and 13 %: 2 workers >= 1.8 x one, 3 >= 2.6 x one.
// - Low limit (20/s, burst 4): 2 and 3 workers, 40 and 60 jobs/s of capacity, 240 jobs each. The
//   pace after the burst, (jobs - burst) / (first arrival to last), is the limit's at best (the
//   server admits no more). Targets: 3 workers' pace >= 0.95 x the limit (and not above it), 3
//   workers' within 5 % of 2 workers' (the limit, not the worker count, sets it), 429s <= 3 % of
//   jobs in each run (the issue's). A fleet starts blind: its first sends, 8 and 12 at once against
//   a burst of 4, and the learner's first cut cost 429s whatever the batch's length, so the table
//   also shows those of the first second.
// --smoke: 6 waves, 1 and 3 workers only, one low-limit run of 3 workers on 30 jobs, printed but
// not judged (a blind start's 429s are most of so short a run); judged: 3 workers' throughput
// against one's, and every job rendered and billed once.
// The Redis: RENDERGUARD_REDIS_URL, else a redis-server on the PATH started for this run; with
// neither it says so and stops.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { enqueueRenders } from "../dist/fleet/index.js";
import { target } from "./harness.js";
import { redisForBench } from "./redis.js";
import { startServerThread } from "./server-thread.js";
import { finish, fmt, sized, smoke } from "./support.js";

const CONCURRENCY = 4;
const RENDER_MS = 200;
const WAVES = sized(25, 6);
const HIGH_WORKERS = smoke ? [1, 3] : [1, 2, 3];
const LOW_WORKERS = smoke ? [3] : [2, 3];
const LOW_JOBS = sized(240, 30);
const highLimit = { ratePerSecond: 1_000, burst: 100 };
const lowLimit = { ratePerSecond: 20, burst: 4 };
const RUN_TIMEOUT_MS = 30_000;
const workerScript = fileURLToPath(new URL("./bullmq-worker.js", import.meta.url));
const perWorkerCeiling = (CONCURRENCY * 1000) / RENDER_MS;

/** One worker process; `ready` resolves once it listens on the queue, `done` with its report after SIGTERM. */
function startWorker(options) {
  const child = spawn(process.execPath, [workerScript, JSON.stringify(options)], { stdio: ["ignore", "pipe", "inherit"] });
  let output = "";
  let onReady;
  const ready = new Promise((resolve) => {
    onReady = resolve;
  });
  child.stdout.on("data", (chunk) => {
    output += chunk;
    if (/^ready$/m.test(output)) onReady();
  });
  const done = new Promise((resolve, reject) => {
    child.once("exit", (code, signal) => {
      if (code === 0) resolve(JSON.parse(output.trim().split("\n").at(-1) ?? "{}"));
      else reject(new Error(`bullmq worker exited with ${code ?? signal}: ${output}`));
    });
  });
  return { child, ready: Promise.race([ready, done.then(() => Promise.reject(new Error("bullmq worker exited before it was ready")))]), done };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let runs = 0;
/** One run: a fresh server, queue, key prefix and output folder; `workers` processes on `jobs` jobs. */
async function runFleet(redisUrl, { workers, jobs, rateLimit }) {
  const run = ++runs;
  const server = await startServerThread({ scenario: { rateLimit, renderDelayMs: RENDER_MS } });
  const tag = `${process.pid}-${run}-${Date.now()}`;
  const queue = new Queue(`rg-bench-bullmq-${tag}`, { connection: { url: redisUrl } });
  const out = mkdtempSync(join(tmpdir(), "renderguard-bullmq-bench-"));
  const keyPrefix = `rg-bench:bullmq:${tag}`;
  const options = { queue: queue.name, redisUrl, keyPrefix, baseUrl: server.url, apiKey: server.apiKey, out, concurrency: CONCURRENCY };
  const fleet = Array.from({ length: workers }, () => startWorker(options));
  const deadline = Date.now() + RUN_TIMEOUT_MS;
  try {
    await Promise.all(fleet.map((w) => w.ready));
    const t0 = Date.now();
    await enqueueRenders(
      queue,
      Array.from({ length: jobs }, (_, i) => ({ id: `doc-${i}`, html: `<h1>document ${i} of run ${run}</h1>` })),
    );
    for (;;) {
      const counts = await queue.getJobCounts("completed", "failed");
      if (counts.completed + counts.failed >= jobs) break;
      if (Date.now() > deadline) throw new Error(`run ${run} not done after ${RUN_TIMEOUT_MS / 1000} s: ${JSON.stringify(counts)}`);
      await sleep(20);
    }
    const queueMs = Date.now() - t0;
    for (const { child } of fleet) child.kill("SIGTERM");
    const reports = await Promise.all(fleet.map((w) => w.done));
    const entries = (await server.entries()).filter((e) => e.path === "/v1/render");
    const arrivals = entries.map((e) => e.at);
    const failed = {};
    for (const report of reports) for (const [code, n] of Object.entries(report.failed)) failed[code] = (failed[code] ?? 0) + n;
    return {
      workers,
      jobs,
      completed: reports.reduce((sum, r) => sum + r.completed, 0),
      failed,
      sent: entries.length,
      billed: entries.filter((e) => e.billed).length,
      status429: entries.filter((e) => e.status === 429).length,
      firstSecond429: entries.filter((e) => e.status === 429 && e.at < Math.min(...arrivals) + 1000).length,
      spanMs: Math.max(...arrivals) - Math.min(...arrivals),
      queueMs,
    };
  } finally {
    for (const { child, done } of fleet) {
      done.catch(() => {});
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    await queue.obliterate({ force: true }).catch(() => {});
    // The limiter's state (redisStore's two keys): the Redis may be RENDERGUARD_REDIS_URL's.
    const keys = new Redis(redisUrl, { lazyConnect: true });
    await keys.del(`{${keyPrefix}}:state`, `{${keyPrefix}}:leases`).catch(() => {});
    keys.disconnect();
    await queue.close();
    await server.close();
    rmSync(out, { recursive: true, force: true });
  }
}

const redis = await redisForBench();
if (!redis) {
  console.log("bullmq fleet: skipped, no RENDERGUARD_REDIS_URL and no redis-server on the PATH that starts");
  finish();
}

const failures = (r) => Object.entries(r.failed).map(([code, n]) => `${code} x${n}`).join(", ");
const high = [];
const low = [];
try {
  console.log(
    `bullmq fleet, high limit (${highLimit.ratePerSecond}/s): ${HIGH_WORKERS.join(", ")} worker processes x ${CONCURRENCY} jobs at once, ` +
      `renders ${RENDER_MS} ms, ${WAVES * CONCURRENCY} jobs a worker; ceiling ${fmt(perWorkerCeiling, 0)} jobs/s a worker`,
  );
  console.log("  workers   jobs  rendered   sent  429s  service jobs/s  x ceiling  x one  queue jobs/s  x one");
  for (const workers of HIGH_WORKERS) {
    const r = await runFleet(redis.url, { workers, jobs: WAVES * CONCURRENCY * workers, rateLimit: highLimit });
    r.rate = r.jobs / ((r.spanMs + RENDER_MS) / 1000);
    r.queueRate = r.jobs / (r.queueMs / 1000);
    high.push(r);
    const [one] = high;
    console.log(
      `  ${String(workers).padStart(7)}${String(r.jobs).padStart(7)}${String(r.completed).padStart(10)}${String(r.sent).padStart(7)}${String(r.status429).padStart(6)}` +
        `${fmt(r.rate, 1).padStart(16)}${fmt(r.rate / (workers * perWorkerCeiling)).padStart(11)}${fmt(r.rate / one.rate).padStart(7)}` +
        `${fmt(r.queueRate, 1).padStart(14)}${fmt(r.queueRate / one.queueRate).padStart(7)}${Object.keys(r.failed).length ? `  failed: ${failures(r)}` : ""}`,
    );
  }
  console.log("  (service: jobs / (first arrival to last + one render), from the ledger; queue: jobs / (enqueue to the last job finished))");

  console.log(
    `bullmq fleet, low limit (${lowLimit.ratePerSecond}/s, burst ${lowLimit.burst}): ${LOW_WORKERS.join(", ")} worker processes x ${CONCURRENCY} jobs at once ` +
      `(${LOW_WORKERS.map((w) => fmt(w * perWorkerCeiling, 0)).join(", ")} jobs/s of capacity), renders ${RENDER_MS} ms, ${LOW_JOBS} jobs`,
  );
  console.log("  workers   jobs  rendered   sent  429s  in 1st s  429 %  pace jobs/s  x limit");
  for (const workers of LOW_WORKERS) {
    const r = await runFleet(redis.url, { workers, jobs: LOW_JOBS, rateLimit: lowLimit });
    r.pace = (r.jobs - lowLimit.burst) / (r.spanMs / 1000);
    low.push(r);
    console.log(
      `  ${String(workers).padStart(7)}${String(r.jobs).padStart(7)}${String(r.completed).padStart(10)}${String(r.sent).padStart(7)}${String(r.status429).padStart(6)}` +
        `${String(r.firstSecond429).padStart(10)}${fmt((100 * r.status429) / r.jobs, 1).padStart(7)}${fmt(r.pace, 2).padStart(13)}${fmt(r.pace / lowLimit.ratePerSecond, 3).padStart(9)}` +
        `${Object.keys(r.failed).length ? `  failed: ${failures(r)}` : ""}`,
    );
  }
  console.log("  (pace: (jobs - burst) / first arrival to last, from the ledger: the limit's rate at best; in 1st s: 429s of the run's first second)");
} finally {
  await redis.stop();
}

const one = high[0];
for (const r of high.slice(1)) {
  const bound = r.workers === 2 ? 1.8 : 2.6;
  target(`${r.workers} workers' throughput >= ${bound} x one's`, r.rate >= bound * one.rate, `${fmt(r.rate / one.rate)} x: ${fmt(r.rate, 1)} against ${fmt(one.rate, 1)} jobs/s`);
}
const three = low.at(-1);
if (smoke) {
  console.log(`  (smoke: ${LOW_JOBS} jobs at the low limit say little of its pace and 429s: not judged)`);
} else {
  target(
    "3 workers' pace within 5 % of the limit, not above it",
    three.pace >= 0.95 * lowLimit.ratePerSecond && three.pace <= lowLimit.ratePerSecond * 1.001,
    `${fmt(three.pace / lowLimit.ratePerSecond, 3)} x ${lowLimit.ratePerSecond}/s`,
  );
  const ratio = three.pace / low[0].pace;
  target("3 workers' pace within 5 % of 2 workers'", Math.abs(ratio - 1) <= 0.05, `${fmt(ratio, 3)} x`);
  target(
    "429s <= 3 % of jobs at the low limit, every run",
    low.every((r) => r.status429 <= 0.03 * r.jobs),
    low.map((r) => `${r.workers} workers: ${r.status429} = ${fmt((100 * r.status429) / r.jobs, 1)} %, ${r.firstSecond429} in the first second`).join("; "),
  );
}
const unrendered = [...high, ...low].filter((r) => r.completed !== r.jobs || r.billed !== r.jobs);
target(
  "every job rendered and billed once",
  unrendered.length === 0,
  unrendered.length ? unrendered.map((r) => `${r.workers} workers: ${r.completed}/${r.jobs} completed, ${r.billed} billed`).join("; ") : "every run",
);
finish();
