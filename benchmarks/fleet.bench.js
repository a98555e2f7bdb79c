// A fleet on one Redis (issue 11): three processes (test/support/fleet-worker.mjs, the e2e fleet
// test's worker: renderMany, 16 in flight, redisStore) share 2,100 jobs against the reference
// server at 200/s, burst 20, renders 2 ms; 20 runs, each with a fresh server and a fresh key prefix
// on one redis-server this benchmark starts on a free loopback port (persistence off) and stops.
// Per run, from the server's ledger: 429s (count and share of jobs), wall time from the first
// arrival to the last as a ratio of the ideal (msToAllow: when the limit lets every job through;
// starting three Node processes is not the limiter's), and resends that arrived before the
// previous answer's Retry-After was up (the e2e check expectNoResendBeforeRetryAfter: a 429's
// arrival plus its wait before rounding). Then the distribution over the runs. Targets: every run
// <= 3 % 429s, no resend before Retry-After. The e2e test judges one run at 4 % and 1.2 x ideal.
// The smoke run: one run of 150 jobs.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { msToAllow } from "../dist/server/index.js";
import { percentile, target } from "./harness.js";
import { startRedis } from "./redis.js";
import { startServerThread } from "./server-thread.js";
import { finish, fmt, sized } from "./support.js";

const RUNS = sized(20, 1);
const JOBS = sized(2_100, 150);
const WORKERS = 3;
const RUN_TIMEOUT_MS = 60_000; // the e2e test's
const rateLimit = { ratePerSecond: 200, burst: 20 };
const scenario = { rateLimit, renderDelayMs: 2 };
const worker = fileURLToPath(new URL("../test/support/fleet-worker.mjs", import.meta.url));
const idealMs = msToAllow(rateLimit, JOBS);

/** One worker process on jobs `from` to `to`; resolves its report (its last stdout line). */
function startWorker(options) {
  const child = spawn(process.execPath, [worker, JSON.stringify(options)], { stdio: ["ignore", "pipe", "inherit"] });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  const done = new Promise((resolve, reject) => {
    child.once("exit", (code, signal) => {
      if (code === 0) resolve(JSON.parse(output.trim().split("\n").at(-1) ?? "{}"));
      else reject(new Error(`fleet worker exited with ${code ?? signal}: ${output}`));
    });
  });
  return { child, done };
}

/** The ledger's render requests by body, each in arrival (seq) order: the e2e support's byBody. */
function byBody(entries) {
  const map = new Map();
  for (const entry of entries) {
    if (entry.path !== "/v1/render") continue;
    map.set(entry.bodySha256, [...(map.get(entry.bodySha256) ?? []), entry]);
  }
  for (const list of map.values()) list.sort((a, b) => a.seq - b.seq);
  return map;
}

/**
 * The e2e check expectNoResendBeforeRetryAfter, counted instead of asserted: resends after a 429
 * (`checked`), and those that arrived before that 429's arrival plus its wait, or followed a 429
 * without Retry-After (`early`).
 */
function resendsBeforeRetryAfter(sends) {
  let checked = 0;
  let early = 0;
  for (const entries of sends.values()) {
    for (let i = 1; i < entries.length; i++) {
      const previous = entries[i - 1];
      if (previous.status !== 429) continue;
      if (previous.retryAfterMs === null || entries[i].at < previous.at + previous.retryAfterMs) early++;
      checked++;
    }
  }
  return { checked, early };
}

/** One run: a fresh server, a fresh key prefix, three workers sharing the jobs evenly. */
async function runFleet(redisUrl, run) {
  const server = await startServerThread({ scenario });
  const keyPrefix = `rg-bench:${process.pid}:fleet:${run}:${Date.now()}`;
  const per = JOBS / WORKERS;
  const fleet = Array.from({ length: WORKERS }, (_, i) =>
    startWorker({ baseUrl: server.url, apiKey: server.apiKey, redisUrl, keyPrefix, from: i * per, to: (i + 1) * per }),
  );
  let timer;
  try {
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`run ${run} not done after ${RUN_TIMEOUT_MS / 1000} s`)), RUN_TIMEOUT_MS);
    });
    const reports = await Promise.race([Promise.all(fleet.map((w) => w.done)), timeout]);
    const entries = await server.entries();
    const wallMs = Math.max(...entries.map((e) => e.at)) - Math.min(...entries.map((e) => e.at));
    const status429 = entries.filter((e) => e.status === 429).length;
    return {
      run,
      rendered: reports.reduce((sum, r) => sum + r.rendered, 0),
      requests: entries.length,
      status429,
      share: status429 / JOBS,
      wallMs,
      ratio: wallMs / idealMs,
      ...resendsBeforeRetryAfter(byBody(entries)),
    };
  } finally {
    clearTimeout(timer);
    for (const { child, done } of fleet) {
      done.catch(() => {});
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    await server.close();
  }
}

const redis = await startRedis();
if (!redis) {
  console.log("fleet: skipped, no redis-server on the PATH that starts");
  finish();
}

const runs = [];
try {
  console.log(
    `fleet on one Redis: ${WORKERS} processes x ${fmt(JOBS / WORKERS, 0)} jobs (${JOBS}), 16 in flight each, ` +
      `200/s burst 20, renders 2 ms; ${RUNS} runs, ideal ${fmt(idealMs / 1000)} s`,
  );
  console.log("  run  rendered   sent   429s  429 %   wall s  x ideal  after 429  early");
  for (let run = 1; run <= RUNS; run++) {
    const r = await runFleet(redis.url, run);
    runs.push(r);
    console.log(
      `  ${String(run).padStart(3)}${String(r.rendered).padStart(10)}${String(r.requests).padStart(7)}${String(r.status429).padStart(7)}` +
        `${fmt(100 * r.share, 1).padStart(7)}${fmt(r.wallMs / 1000).padStart(9)}${fmt(r.ratio, 3).padStart(9)}${String(r.checked).padStart(11)}${String(r.early).padStart(7)}`,
    );
  }
} finally {
  await redis.stop();
}

console.log("  (wall: first to last arrival in the ledger; after 429: resends that followed a 429; early: of those, sent before its Retry-After)");
const spread = (label, values, show) =>
  console.log(
    `  ${label.padEnd(10)} min ${show(Math.min(...values))}  median ${show(percentile(values, 50))}  p95 ${show(percentile(values, 95))}  max ${show(Math.max(...values))}`,
  );
console.log(`distribution over ${runs.length} runs`);
spread("429 %", runs.map((r) => 100 * r.share), (v) => fmt(v, 1));
spread("x ideal", runs.map((r) => r.ratio), (v) => fmt(v, 3));
const over = runs.filter((r) => r.share > 0.03);
const slow = runs.filter((r) => r.ratio > 1.2);
console.log(`  runs over 1.2 x ideal (the e2e test's bound): ${slow.length}${slow.length ? ` (${slow.map((r) => `run ${r.run}: ${fmt(r.ratio, 3)}`).join(", ")})` : ""}`);
const short = runs.filter((r) => r.rendered !== JOBS);
if (short.length) console.log(`  runs that did not render every job: ${short.map((r) => `run ${r.run}: ${r.rendered}/${JOBS}`).join(", ")}`);
target(
  "every run <= 3 % 429s",
  over.length === 0,
  `max ${fmt(100 * Math.max(...runs.map((r) => r.share)), 1)} %, ${over.length}/${runs.length} runs over${over.length ? `: ${over.map((r) => `run ${r.run} ${r.status429}`).join(", ")}` : ""}`,
);
const early = runs.reduce((sum, r) => sum + r.early, 0);
target("no resend before Retry-After", early === 0, `${early} early of ${runs.reduce((sum, r) => sum + r.checked, 0)} resends after a 429`);
finish();
