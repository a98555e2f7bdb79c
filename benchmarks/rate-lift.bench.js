// A limit lifted under scattered 429s: 50/s with a burst of 5 until t=5 s, then no limit, while 3 %
// of requests get rate_limited (Retry-After 1 s) at random all along; renders of 10 ms, 3,000 jobs,
// 16 workers, every peer. The limit's 429s hide the scattered ones, so the learner has learned no
// background share when the limit goes (only what its sends held below the limit got), and the
// scattered 429s its probes then meet look like a limit. Targets (renderguard, defaults): wall
// <= 1.1 x the hand-written loop that honours Retry-After, and at least 0.9 x the loop's renders
// in the 5 s after the lift (the loop has no rate to recover). The smoke run squeezes the timeline
// to a tenth (rate-runs.js), on 80 jobs, a peer stopped at 2.5 s
// (or 1.25 x renderguard's time, if later).
import { comparePeers } from "./compare.js";
import { figures, job, target } from "./harness.js";
import { rateLiftRun } from "./rate-runs.js";
import { finish, fmt, sized } from "./support.js";

const { scenario, count, liftMs, rendersAfterLift } = rateLiftRun;
const jobs = Array.from({ length: count }, (_, i) => job(i));

const runs = await comparePeers({
  title: `rate lift: 50/s (burst 5) until ${fmt(liftMs / 1000, 1)} s, then none; 3 % rate_limited at random (Retry-After 1 s); render 10 ms; ${count} jobs, 16 workers`,
  scenario,
  jobs,
  stopAfterMs: sized(40_000, 2500),
});
const [ours, loop] = ["renderguard", "hand-written loop"].map((name) => runs.find((r) => r.name === name));
const [oursAfter, loopAfter] = [ours, loop].map(rendersAfterLift);
console.log(`  renders in the ${fmt(liftMs / 1000, 1)} s after the lift: renderguard ${oursAfter}, hand-written loop ${loopAfter}`);
const [oursWall, loopWall] = [ours, loop].map((run) => figures(run).wallMs);
target("renderguard wall <= 1.1 x the hand-written loop", oursWall <= 1.1 * loopWall, `${fmt(oursWall / loopWall)} x`);
target("renderguard renders after the lift >= 0.9 x the hand-written loop's", oursAfter >= 0.9 * loopAfter, `${fmt(oursAfter / Math.max(1, loopAfter))} x`);
finish();
