// Target: a realistic mix, 500 jobs, 16 workers (renderguard: defaults, limiter concurrency 16):
// 5% of requests rate_limited with an HTTP-date Retry-After, 5% internal_error (no Retry-After),
// renders of 10-20 ms; 3% of jobs fail to render (422 render_failed, billed: never to be retried),
// 1% always time out (408 after 300 ms), 1% are over the 4 KiB body limit (400). renderguard renders
// every renderable job (not 400, not render_failed, not always timing out) and finishes before got,
// p-retry and undici's RetryAgent in the same run. plain-undici for comparison.
// Clients that retry a 408 five times with exponential backoff need 15-35 s to give up on the
// always-timing-out jobs, so a contender other than renderguard still running at STOP_S (default
// 12 s), or at 1.25 x renderguard's wall time if that is later, is stopped and its wall time printed
// as a lower bound: "faster" is then still decided. renderguard runs first, stopped at 30 s.
import { figures, job, printTable, runContender, target } from "./harness.js";
import * as got from "./peers/got.js";
import * as plainUndici from "./peers/plain-undici.js";
import * as pRetry from "./peers/p-retry.js";
import * as renderguard from "./peers/renderguard.js";
import * as undiciRetryAgent from "./peers/undici-retry-agent.js";
import { fmt } from "./support.js";

const count = Number(process.env.JOBS ?? 500);
const stopAfterMs = Number(process.env.STOP_S ?? 12) * 1000;
const maxBodyBytes = 4096;

/** What each job is made to do, by index: deterministic, so every contender gets the same work. */
const kindOf = (i) => (i % 33 === 16 ? "fail" : i % 100 === 50 ? "timeout" : i % 100 === 75 ? "oversize" : "ok");
const extra = {
  ok: "",
  fail: "<!-- render:fail -->",
  timeout: "<!-- render:timeout -->",
  oversize: `<p>${"x".repeat(maxBodyBytes)}</p>`,
};
const jobs = Array.from({ length: count }, (_, i) => job(i, extra[kindOf(i)]));
const renderable = jobs.map((_, i) => i).filter((i) => kindOf(i) === "ok");

const scenario = {
  quota: { renders: 1_000_000, periodMs: 86_400_000 },
  renderDelayMs: 10,
  renderJitterMs: 10,
  renderTimeoutMs: 300,
  maxBodyBytes,
  retryAfter: { format: "http-date" },
  faults: [
    { fault: "rate_limited", probability: 0.05, retryAfterMs: 1000 },
    { fault: "internal_error", probability: 0.05 },
  ],
};

const runs = [
  await runContender({
    name: "renderguard",
    peer: renderguard.renderJobs,
    scenario,
    jobs,
    runOptions: { options: { limiter: { concurrency: 16 } } },
    stopAfterMs: 30_000,
  }),
];
const othersStopMs = Math.max(stopAfterMs, Math.ceil(1.25 * runs[0].wallMs));
for (const [name, peer] of [
  ["got", got.renderJobs],
  ["p-retry", pRetry.renderJobs],
  ["undici-retry-agent", undiciRetryAgent.renderJobs],
  ["plain-undici", plainUndici.renderJobs],
]) {
  runs.push(await runContender({ name, peer, scenario, jobs, stopAfterMs: othersStopMs }));
}

const kinds = ["fail", "timeout", "oversize"].map((k) => `${jobs.filter((_, i) => kindOf(i) === k).length} ${k}`);
printTable(
  `mixed faults: 5% rate_limited (HTTP-date Retry-After), 5% internal_error, render 10-20 ms; ${count} jobs (${kinds.join(", ")}), 16 workers`,
  runs,
  "renderguard",
);
for (const run of runs) {
  const done = renderable.filter((i) => run.outcomes[i]?.ok).length;
  console.log(`  ${run.name}: renderable jobs rendered ${done}/${renderable.length}${run.stopped ? " by the stop" : ""}`);
}
const [ours, ...others] = runs;
const missing = renderable.filter((i) => !ours.outcomes[i]?.ok);
target(
  "renderguard renders every renderable job",
  missing.length === 0,
  `${renderable.length - missing.length}/${renderable.length}${missing.length ? `; failed: ${[...new Set(missing.map((i) => ours.outcomes[i]?.code))].join(", ")}` : ""}`,
);
for (const other of others.filter((r) => r.name !== "plain-undici")) {
  const wall = (r) => `${r.stopped ? ">" : ""}${fmt(r.wallMs / 1000)} s`;
  target(`renderguard faster than ${other.name}`, !ours.stopped && ours.wallMs < other.wallMs, `${wall(ours)} vs ${wall(other)}`);
}
console.log(`  renderguard billed more than once: ${figures(ours).billedTwice} bodies`);
