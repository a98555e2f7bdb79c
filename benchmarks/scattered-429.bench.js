// Scattered 429s: 5 % of requests get rate_limited with Retry-After 1 s, whatever the send rate
// (the scattered-429 scenario; renders take 10 ms), 1,000 jobs, 16 workers, every peer. Targets
// (renderguard, defaults): wall <= 1.1 x the hand-written loop that honours Retry-After, no job
// resent before its Retry-After, and the fastest peer that loses no job and bills nothing twice
// (or every faster one paid for it). Beside them, the wall a client that keeps every Retry-After
// and wastes nothing else would have, modelled: the peers that beat it resent early.
import { builtinScenarios } from "../dist/server/index.js";
import { seededRandom } from "../dist/server/random.js";
import { comparePeers } from "./compare.js";
import { workers } from "./peers/all.js";
import { figures, job, lastRetryAfterUp, percentile, target } from "./harness.js";
import { finish, fmt, sized } from "./support.js";

const count = sized(1000, 100);
const jobs = Array.from({ length: count }, (_, i) => job(i));

const runs = await comparePeers({
  title: `scattered 429s: 5 % rate_limited (Retry-After 1 s), render 10 ms, ${count} jobs, 16 workers`,
  scenario: builtinScenarios["scattered-429"],
  jobs,
  stopAfterMs: sized(30_000, 3000),
});
// A client that keeps every Retry-After cannot finish before the last one it was given is up: how
// long each ran past it says how much of its wall its own pace cost; a negative figure, that it
// resent before it, or gave the job up.
const past = runs.map((run) => [run, lastRetryAfterUp(run)]).filter(([, up]) => up !== undefined);
console.log(
  "  wall past the last Retry-After it was given (no client that keeps them all finishes sooner; " +
    `negative: it resent before it, or gave the job up): ${past.map(([run, up]) => `${run.name} ${fmt((run.wallMs - up) / 1000)} s`).join("; ")}`,
);
const floor = retryAfterFloor(runs.find((r) => r.name === "no policy"));
console.log(
  `  the fastest a client that keeps every Retry-After could be, modelled (${workers} places at no policy's ${fmt(floor.renderMs, 1)} ms a render, ` +
    `${floor.share * 100} % of sends refused, each resent the moment its Retry-After is up; ${floor.seeds} seeds): ` +
    `median ${fmt(floor.medianMs / 1000)} s, fastest ${fmt(floor.fastestMs / 1000)} s`,
);
const [ours, loop] = ["renderguard", "hand-written loop"].map((name) => figures(runs.find((r) => r.name === name)));
target("renderguard wall <= 1.1 x the hand-written loop", ours.wallMs <= 1.1 * loop.wallMs, `${fmt(ours.wallMs / loop.wallMs)} x`);
target("renderguard resends before Retry-After = 0", ours.early === 0, `${ours.early}`);
finish();

/**
 * The wall time of a client that keeps every Retry-After and wastes nothing else, modelled on this
 * scenario: `workers` places, each render taking what it took no policy (its places' time over its
 * renders), a 429 taking no time, the scenario's share of sends refused whatever the rate, each
 * refused job sent again the moment its Retry-After is up (ahead of jobs not sent yet), over
 * `seeds` seeded runs. A client that keeps them all finishes no sooner: the peers that beat it
 * resent before Retry-After.
 */
function retryAfterFloor(noPolicy, seeds = 200) {
  const [{ probability: share, retryAfterMs }] = builtinScenarios["scattered-429"].faults;
  const rendered = noPolicy.outcomes.filter((o) => o?.ok).length;
  const renderMs = (noPolicy.wallMs * workers) / rendered;
  const walls = Array.from({ length: seeds }, (_, seed) => {
    const refused = seededRandom(seed + 1);
    const free = new Array(workers).fill(0); // when each place is next free
    // When each refused job may be sent again, soonest first: pushed in order, as `at` never
    // decreases (each send goes at the soonest free place, or at the soonest resend).
    const due = [];
    let unsent = count;
    let wall = 0;
    while (unsent > 0 || due.length > 0) {
      const place = free.indexOf(Math.min(...free));
      const at = unsent > 0 ? free[place] : Math.max(free[place], due[0]);
      if (due.length > 0 && due[0] <= at) due.shift();
      else unsent--;
      if (refused() < share) {
        due.push(at + retryAfterMs);
        free[place] = at;
      } else {
        free[place] = at + renderMs;
        wall = Math.max(wall, free[place]);
      }
    }
    return wall;
  });
  return { share, renderMs, seeds, medianMs: percentile(walls, 50), fastestMs: Math.min(...walls) };
}
