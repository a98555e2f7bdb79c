// Target: scattered 429s (5% of requests get rate_limited with Retry-After 1 s, whatever the send
// rate; renders take 10 ms), 500 jobs, 16 workers: renderguard, with as many sends in flight as the
// loop (limiter concurrency 16), takes <= 1.1 x the wall time of a plain retry loop that honours
// Retry-After, and resends no job before its Retry-After. p-retry (no Retry-After) for comparison.
import { builtinScenarios } from "../dist/server/index.js";
import { figures, job, printTable, runContender, target } from "./harness.js";
import * as plainUndici from "./peers/plain-undici.js";
import * as pRetry from "./peers/p-retry.js";
import * as renderguard from "./peers/renderguard.js";
import { fmt } from "./support.js";

const count = Number(process.env.JOBS ?? 500);
const jobs = Array.from({ length: count }, (_, i) => job(i));
const scenario = builtinScenarios["scattered-429"];

let sendRate;
const runs = [];
runs.push(await runContender({ name: "plain-undici (baseline)", peer: plainUndici.renderJobs, scenario, jobs }));
runs.push(await runContender({ name: "p-retry", peer: pRetry.renderJobs, scenario, jobs }));
runs.push(
  await runContender({
    name: "renderguard",
    peer: renderguard.renderJobs,
    scenario,
    jobs,
    runOptions: {
      options: { limiter: { concurrency: 16 } },
      onEnd: (client) => {
        sendRate = client.stats().sendRate;
      },
    },
  }),
);

printTable(`scattered 429s: 5% rate_limited (Retry-After 1 s), render 10 ms, ${count} jobs, 16 workers`, runs, "plain-undici (baseline)");
const [baseline, , ours] = runs.map(figures);
console.log(`  renderguard's learned send rate at the end: ${sendRate === undefined ? "none (not limiting)" : `${fmt(sendRate, 1)}/s`}`);
target("renderguard wall <= 1.1 x plain-undici", ours.wallMs <= 1.1 * baseline.wallMs, `${fmt(ours.wallMs / baseline.wallMs)} x`);
target("renderguard resends before Retry-After = 0", ours.early === 0, `${ours.early}`);
