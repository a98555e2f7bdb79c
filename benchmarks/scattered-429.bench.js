// Scattered 429s: 5 % of requests get rate_limited with Retry-After 1 s, whatever the send rate
// (the scattered-429 scenario; renders take 10 ms), 1,000 jobs, 16 workers, every peer. Targets
// (renderguard, defaults): wall <= 1.1 x the hand-written loop that honours Retry-After, no job
// resent before its Retry-After, and the fastest peer that loses no job and bills nothing twice.
import { builtinScenarios } from "../dist/server/index.js";
import { comparePeers } from "./compare.js";
import { figures, job, lastRetryAfterUp, target } from "./harness.js";
import { finish, fmt, sized } from "./support.js";

const count = sized(1000, 200);
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
const [ours, loop] = ["renderguard", "hand-written loop"].map((name) => figures(runs.find((r) => r.name === name)));
target("renderguard wall <= 1.1 x the hand-written loop", ours.wallMs <= 1.1 * loop.wallMs, `${fmt(ours.wallMs / loop.wallMs)} x`);
target("renderguard resends before Retry-After = 0", ours.early === 0, `${ours.early}`);
finish();
