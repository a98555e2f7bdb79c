// A limit that steps down and back up: 200/s with a burst of 20, 50/s from t=3 s to t=7 s, then
// 200/s (the rate-step scenario), Retry-After in whole seconds, renders of 2 ms, 2,400 jobs, 16
// workers, every peer. Ideal: the time by which the schedule lets 2,400 requests through
// (msToAllow). Targets (renderguard, defaults): wall <= 1.12 x ideal, 429s <= 3 % of jobs, no job
// resent before its Retry-After, and the fastest peer that loses no job and bills nothing twice.
// A peer still going at 1.5 x ideal (or 1.25 x renderguard's time, if later) is stopped. The smoke
// run squeezes the timeline to a tenth (rate-runs.js), on 120 jobs, a peer
// stopped at 1 s (or 1.25 x renderguard's time, if later).
import { msToAllow, rateAt } from "../dist/server/index.js";
import { comparePeers } from "./compare.js";
import { figures, job, target } from "./harness.js";
import { rateStepRun } from "./rate-runs.js";
import { finish, fmt, sized } from "./support.js";

const { scenario, count } = rateStepRun;
const jobs = Array.from({ length: count }, (_, i) => job(i));
const [down, up] = scenario.rateLimit.steps.map((s) => fmt(s.fromMs / 1000, 1));
const ideal = { name: "ideal (schedule)", wallMs: msToAllow(scenario.rateLimit, count) };

const [ours] = await comparePeers({
  title: `rate step: 200/s (burst 20), 50/s from ${down} s to ${up} s, then 200/s; render 2 ms; ${count} jobs, 16 workers`,
  scenario,
  jobs,
  ideal,
  stopAfterMs: Math.max(sized(2000, 1000), 1.5 * ideal.wallMs),
  chart: {
    file: "rate-step.svg",
    title: `A limit that steps down and back up: requests per second, ${count} jobs, 16 workers`,
    subtitle: `Dashed: the limit, 200/s, 50/s from ${down} s to ${up} s, then 200/s again.`,
    limit: { name: "limit", perSecondAt: (ms) => rateAt(scenario.rateLimit, ms) },
    yMax: 600,
  },
});
const f = figures(ours);
target("renderguard wall <= 1.12 x ideal", !ours.stopped && f.wallMs <= 1.12 * ideal.wallMs && f.rendered === count, `${fmt(f.wallMs / ideal.wallMs)} x ideal ${fmt(ideal.wallMs / 1000)} s, ${f.rendered}/${count} rendered`);
target("renderguard 429s <= 3 % of jobs", f.status429 <= 0.03 * count, `${f.status429} = ${fmt((100 * f.status429) / count, 1)} %`);
target("renderguard resends before Retry-After = 0", f.early === 0, `${f.early}`);
finish();
