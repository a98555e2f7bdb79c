// The spread of renderguard's row in the two rate benchmarks: its run alone (the same warm-up,
// options and jobs as the peer tables' renderguard row), repeated, so the range of its wall time and
// 429s can be quoted, not one run's figure. Not part of `npm run bench`.
//
//   node benchmarks/spread.js rate-limit|rate-step [runs, default 10]
import { msToAllow } from "../dist/server/index.js";
import { warmUpJobs, warmUpScenario } from "./compare.js";
import { figures, job, runContender } from "./harness.js";
import { allPeers, workers } from "./peers/all.js";
import { rateLimitRun, rateStepRun } from "./rate-runs.js";
import { finish, fmt } from "./support.js";

const scenarios = { "rate-limit": rateLimitRun, "rate-step": rateStepRun };
const [name, runsArg = "10"] = process.argv.slice(2);
const chosen = scenarios[name];
const runs = Number(runsArg);
if (!chosen || !Number.isInteger(runs) || runs < 1) {
  throw new TypeError(`Usage: node benchmarks/spread.js ${Object.keys(scenarios).join("|")} [runs]`);
}
const { scenario, count } = chosen;
const jobs = Array.from({ length: count }, (_, i) => job(i));
const idealMs = msToAllow(scenario.rateLimit, count);
const { peer, runOptions } = allPeers[0];
const ratios = [];
const limited = [];
for (let i = 0; i < runs; i++) {
  await runContender({ name: "warm-up", peer, scenario: warmUpScenario, jobs: warmUpJobs, workers, runOptions });
  const f = figures(await runContender({ name: "renderguard", peer, scenario, jobs, workers, runOptions }));
  ratios.push(f.wallMs / idealMs);
  limited.push(f.status429);
  console.log(`${name} run ${i + 1}: ${fmt(f.wallMs / 1000)} s, ${fmt(f.wallMs / idealMs)} x ideal, ${f.status429} 429s, ${f.rendered}/${count} rendered`);
}
const range = (values, digits, scale = 1) => `${fmt(Math.min(...values) * scale, digits)} to ${fmt(Math.max(...values) * scale, digits)}`;
console.log(`${name}, ${runs} runs: ${range(ratios, 2)} x ideal ${fmt(idealMs / 1000)} s; 429s ${range(limited, 0)} (${range(limited, 1, 100 / count)} % of jobs)`);
finish();
