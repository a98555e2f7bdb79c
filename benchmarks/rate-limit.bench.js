// Rate limit: the reference server's rate-limit scenario (200/s, a burst of 20, Retry-After in
// whole seconds), 2,200 jobs (ideal 10.9 s: the time by which the limit lets them all through),
// 16 workers, every peer. Targets (renderguard, defaults): wall <= 1.10 x ideal, 429s <= 2 % of
// jobs, and the fastest peer that loses no job and bills nothing twice. A peer still going at 1.5 x
// ideal (or 1.25 x renderguard's time, if later) is stopped: the plain retry loops need about a
// minute, each 429 parking a worker for 1 s. The smoke run: 80 jobs, a peer stopped at 1 s (or
// 1.25 x renderguard's time, if later).
import { msToAllow, rateAt } from "../dist/server/index.js";
import { comparePeers } from "./compare.js";
import { figures, job, target } from "./harness.js";
import { rateLimitRun } from "./rate-runs.js";
import { finish, fmt, sized } from "./support.js";

const { scenario, count } = rateLimitRun;
const jobs = Array.from({ length: count }, (_, i) => job(i));
const ideal = { name: "ideal (limit)", wallMs: msToAllow(scenario.rateLimit, count) };

const [ours] = await comparePeers({
  title: `rate limit 200/s (burst 20), Retry-After in whole seconds; ${count} jobs, 16 workers`,
  scenario,
  jobs,
  ideal,
  stopAfterMs: Math.max(sized(2000, 1000), 1.5 * ideal.wallMs),
  chart: {
    file: "rate-limit.svg",
    title: `Rate limit 200/s: requests per second, ${count} jobs, 16 workers`,
    subtitle: "Dashed: the limit. Every line past it is 429s.",
    limit: { name: "limit", perSecondAt: (ms) => rateAt(scenario.rateLimit, ms) },
    yMax: 600,
  },
});
const f = figures(ours);
target("renderguard wall <= 1.10 x ideal", !ours.stopped && f.wallMs <= 1.1 * ideal.wallMs && f.rendered === count, `${fmt(f.wallMs / ideal.wallMs)} x ideal ${fmt(ideal.wallMs / 1000)} s, ${f.rendered}/${count} rendered`);
target("renderguard 429s <= 2 % of jobs", f.status429 <= 0.02 * count, `${f.status429} = ${fmt((100 * f.status429) / count, 1)} %`);
finish();
