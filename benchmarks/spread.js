// The spread of renderguard's row in the rate benchmarks: its run alone (the same warm-up, options
// and jobs as the peer tables' renderguard row), repeated, so the range of its figures can be
// quoted, not one run's. `rate-lift` runs the hand-written loop beside it, as its targets are ratios
// to the loop's, and gives each run the next server seed (1 is the table's): where its scattered
// 429s fall decides most of it. Not part of `npm run bench`.
//
//   node benchmarks/spread.js rate-limit|rate-step|rate-lift [runs, default 10]
import { msToAllow } from "../dist/server/index.js";
import { warmUpJobs, warmUpScenario } from "./compare.js";
import { figures, job, runContender } from "./harness.js";
import { allPeers, workers } from "./peers/all.js";
import { rateLiftRun, rateLimitRun, rateStepRun } from "./rate-runs.js";
import { finish, fmt } from "./support.js";

const scenarios = { "rate-limit": rateLimitRun, "rate-step": rateStepRun, "rate-lift": rateLiftRun };
const [name, runsArg = "10"] = process.argv.slice(2);
const chosen = scenarios[name];
const runs = Number(runsArg);
if (!chosen || !Number.isInteger(runs) || runs < 1) {
  throw new TypeError(`Usage: node benchmarks/spread.js ${Object.keys(scenarios).join("|")} [runs]`);
}
const { scenario, count } = chosen;
const jobs = Array.from({ length: count }, (_, i) => job(i));
const contender = (peerName) => allPeers.find((p) => p.name === peerName);

/** A contender's timed run on `seed`, after the warm-up every table's contender gets. */
async function runAlone({ name: contenderName, peer, runOptions }, seed = 1) {
  await runContender({ name: "warm-up", peer, scenario: warmUpScenario, jobs: warmUpJobs, workers, runOptions });
  return runContender({ name: contenderName, peer, scenario, seed, jobs, workers, runOptions });
}

const range = (values, digits, scale = 1) => `${fmt(Math.min(...values) * scale, digits)} to ${fmt(Math.max(...values) * scale, digits)}`;
const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;

if (name === "rate-lift") {
  const walls = [];
  const afters = [];
  const loopAfters = [];
  for (let seed = 1; seed <= runs; seed++) {
    const [ours, loop] = [await runAlone(contender("renderguard"), seed), await runAlone(contender("hand-written loop"), seed)];
    const [oursWall, loopWall] = [ours.wallMs, loop.wallMs];
    const [oursAfter, loopAfter] = [ours, loop].map(chosen.rendersAfterLift);
    const [wall, after] = [oursWall / loopWall, oursAfter / Math.max(1, loopAfter)];
    walls.push(wall);
    afters.push(after);
    loopAfters.push(loopAfter);
    console.log(
      `rate-lift seed ${seed}: renderguard ${fmt(oursWall / 1000)} s (${fmt(wall)} x the loop's ${fmt(loopWall / 1000)} s), ` +
        `${oursAfter} renders after the lift (${fmt(after)} x the loop's ${loopAfter})`,
    );
  }
  const within = (values, met) => values.filter(met).length;
  console.log(
    `rate-lift, seeds 1 to ${runs}: wall ${range(walls, 2)} x the loop's (<= 1.1 x in ${within(walls, (r) => r <= 1.1)}), ` +
      `renders after the lift ${range(afters, 2)} x the loop's (>= 0.9 x in ${within(afters, (r) => r >= 0.9)}; ` +
      `${fmt(mean(afters), 2)} x on average, the loop ${Math.round(mean(loopAfters))} on average)`,
  );
} else {
  const idealMs = msToAllow(scenario.rateLimit, count);
  const ratios = [];
  const limited = [];
  for (let i = 0; i < runs; i++) {
    const f = figures(await runAlone(contender("renderguard")));
    ratios.push(f.wallMs / idealMs);
    limited.push(f.status429);
    console.log(`${name} run ${i + 1}: ${fmt(f.wallMs / 1000)} s, ${fmt(f.wallMs / idealMs)} x ideal, ${f.status429} 429s, ${f.rendered}/${count} rendered`);
  }
  console.log(`${name}, ${runs} runs: ${range(ratios, 2)} x ideal ${fmt(idealMs / 1000)} s; 429s ${range(limited, 0)} (${range(limited, 1, 100 / count)} % of jobs)`);
}
finish();
