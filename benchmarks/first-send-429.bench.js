// Targets, in two parts.
// (a) Every job's first send gets 429 rate_limited (Retry-After 1 s) from t=0, its resend renders;
//     500 jobs, 16 workers: every job done within 1000 + 250 (retryAfterSpread) + 500 ms of its first
//     send (first arrival of its body in the ledger, to the job's success). Baseline: plain-undici.
//     16 workers and 1 s per job make this part about 33 s a contender; one still running at 45 s
//     is stopped (its unfinished jobs count as not done in time).
// (b) Warm: jobs render normally for 2 s, then for 1 s every first send gets 429, then normal again;
//     renderguard's learned send rate (client.stats().sendRate, sampled every 10 ms) never drops
//     below half the goodput (renders per second, from the ledger) of the second before the window.
// renderguard: defaults plus limiter concurrency 16. The smoke run: (a) on 32 jobs, stopped at 10 s;
// (b) on a timeline squeezed to half (1 s warm, 0.5 s of 429s, jobs taken until 2.5 s).
import { setInterval, clearInterval } from "node:timers";
import { builtinScenarios } from "../dist/server/index.js";
import { bodySha256, byBody, figures, job, percentile, printTable, runContender, target } from "./harness.js";
import * as plainUndici from "./peers/plain-undici.js";
import * as renderguard from "./peers/renderguard.js";
import { fmt, sized } from "./support.js";

const count = sized(500, 32);
const options = { limiter: { concurrency: 16 } };
const allowedMs = 1000 + 250 + 500;

/** Each finished job's time from its first send reaching the server to its success, in ms. */
function firstSendToSuccess(run, jobs) {
  const groups = byBody(run.ledger);
  return run.outcomes.flatMap((o, i) => {
    const first = groups.get(bodySha256(jobs[i]))?.[0];
    return o?.ok && first ? [o.doneAt - first.at] : [];
  });
}

// (a)
const jobsA = Array.from({ length: count }, (_, i) => job(i));
const scenarioA = builtinScenarios["first-send-429"];
const stopAfterMs = sized(45_000, 10_000); // the loop needs about 33 s; a contender still running at 45 s is stopped
const runsA = [
  await runContender({ name: "plain-undici (baseline)", peer: plainUndici.renderJobs, scenario: scenarioA, jobs: jobsA, stopAfterMs }),
  await runContender({ name: "renderguard", peer: renderguard.renderJobs, scenario: scenarioA, jobs: jobsA, runOptions: { options }, stopAfterMs }),
];
printTable(`(a) every first send 429 rate_limited (Retry-After 1 s), render 10 ms, ${count} jobs, 16 workers`, runsA, "plain-undici (baseline)");
const spans = runsA.map((run) => firstSendToSuccess(run, jobsA));
runsA.forEach((run, i) => {
  const s = spans[i];
  console.log(`  ${run.name}: first send to success, ms: p50 ${fmt(percentile(s, 50), 0)}, p99 ${fmt(percentile(s, 99), 0)}, max ${fmt(Math.max(...s), 0)} (${s.length} jobs rendered)`);
});
const oursA = spans[1];
const slow = oursA.filter((ms) => ms > allowedMs).length;
target(
  `(a) renderguard: every job done within ${allowedMs} ms of its first send`,
  slow === 0 && oursA.length === count,
  `max ${fmt(Math.max(...oursA), 0)} ms, p99 ${fmt(percentile(oursA, 99), 0)} ms, ${slow} over, ${count - oursA.length} not rendered`,
);

// (b)
const timeScale = sized(1, 1 / 2);
const window = { fromMs: 2000 * timeScale, toMs: 3000 * timeScale };
const scenarioB = {
  ...scenarioA,
  faults: [{ fault: "rate_limited", firstSendOnly: true, retryAfterMs: 1000, ...window }],
};
const jobsB = Array.from({ length: 50_000 }, (_, i) => job(i));
const samples = [];
let sampler;
let clientStartedAt;
const runB = await runContender({
  name: "renderguard",
  peer: renderguard.renderJobs,
  scenario: scenarioB,
  jobs: jobsB,
  runOptions: {
    options,
    until: Date.now() + 5000 * timeScale, // stop taking new jobs about 2 s after the window
    onStart: (client) => {
      clientStartedAt = Date.now();
      sampler = setInterval(() => samples.push({ at: Date.now(), rate: client.stats().sendRate }), 10);
    },
    onEnd: () => clearInterval(sampler),
  },
});
const serverStart = runB.ledger[0].at - runB.ledger[0].elapsedMs;
const rendersIn = (from, to) => runB.ledger.filter((e) => e.outcome === "rendered" && e.elapsedMs >= from && e.elapsedMs < to).length;
const goodput = rendersIn(window.fromMs - 1000, window.fromMs); // renders in one second = per second
const limited = samples.filter((s) => s.rate !== undefined);
const lowest = limited.reduce((low, s) => (low === undefined || s.rate < low.rate ? s : low), undefined);
const at = (s) => `t=${fmt((s.at - serverStart) / 1000)} s`;
console.log();
const seconds = (ms) => String(ms / 1000);
printTable(
  `(b) ${seconds(window.fromMs)} s warm, then ${seconds(window.toMs - window.fromMs)} s of 429 on every first send (t=${seconds(window.fromMs)}-${seconds(window.toMs)} s), then normal; render 10 ms, 16 workers`,
  [runB],
  "renderguard",
);
console.log(`  goodput in the second before the window: ${goodput}/s; renders/s in the window ${(rendersIn(window.fromMs, window.toMs) * 1000) / (window.toMs - window.fromMs)}, in the second after ${rendersIn(window.toMs, window.toMs + 1000)}`);
console.log(`  sendRate samples: ${samples.length} (every 10 ms from ${fmt((clientStartedAt - serverStart) / 1000)} s), ${limited.length} with a learned rate`);
for (const t of [1.9, 2.1, 2.5, 3.0, 3.5, 4.0, 4.9].map((s) => s * timeScale)) {
  const s = samples.findLast((x) => x.at - serverStart <= t * 1000);
  console.log(`    at t=${fmt(t, sized(1, 2))} s: ${s?.rate === undefined ? "none" : `${fmt(s.rate, 1)}/s`}`);
}
target(
  "(b) renderguard's learned rate never below half the goodput before the window",
  lowest === undefined || lowest.rate >= goodput / 2,
  lowest === undefined ? `no rate learned; goodput ${goodput}/s` : `lowest ${fmt(lowest.rate, 1)}/s at ${at(lowest)}; half the goodput ${fmt(goodput / 2, 1)}/s`,
);
console.log(`  (b) jobs: ${figures(runB).rendered} rendered, ${figures(runB).failed} failed`);
