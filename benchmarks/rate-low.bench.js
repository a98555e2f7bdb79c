// A limit of a few requests per second (5/s and 20/s, a burst of a fifth of a second), Retry-After
// in whole seconds, renders of 2 ms, ten seconds of jobs at the limit, 16 workers. At such limits
// a second holds too few answers to judge a cut by, and 16 workers told the same Retry-After come
// back together. renderguard (defaults): every job rendered, no job resent before its Retry-After,
// fewer requests than the plain loop. plain-undici and p-retry in the same table (stopped at 60 s).
// Then the same at 40/s for four callers of render() (below).
import { msToAllow } from "../dist/server/index.js";
import { figures, job, printTable, runContender, target } from "./harness.js";
import * as plainUndici from "./peers/plain-undici.js";
import * as pRetry from "./peers/p-retry.js";
import * as renderguard from "./peers/renderguard.js";
import { fmt, sized } from "./support.js";

/**
 * renderguard (`oursName`, K callers of `render()` with its defaults), the plain loop and p-retry,
 * each with `workers` workers, on `count` jobs under `rateLimit` (renders of 2 ms), stopped after
 * `stopAfterMs`; prints the table under `title` and judges the targets every case shares, each
 * named with `label`. Returns renderguard's and the plain loop's figures and the ideal wall time.
 */
async function raceAtLimit({ label, title, rateLimit, count, workers, oursName, stopAfterMs }) {
  const jobs = Array.from({ length: count }, (_, i) => job(i));
  const scenario = { renderDelayMs: 2, rateLimit };
  const ideal = { name: "ideal (limit)", wallMs: msToAllow(rateLimit, count) };
  const runs = [];
  for (const [name, peer] of [
    [oursName, renderguard.renderJobs],
    ["plain-undici", plainUndici.renderJobs],
    ["p-retry", pRetry.renderJobs],
  ]) {
    runs.push(await runContender({ name, peer, scenario, jobs, workers, stopAfterMs }));
  }
  printTable(title, runs, ideal);
  const [ours, plain] = runs.map(figures);
  target(`${label}: renderguard renders every job`, ours.rendered === count, `${ours.rendered}/${count}, ${fmt(ours.wallMs / ideal.wallMs)} x ideal`);
  target(`${label}: renderguard resends before Retry-After = 0`, ours.early === 0, `${ours.early}`);
  return { ours, plain };
}

for (const perSecond of [5, 20]) {
  const count = perSecond * sized(10, 1);
  const rateLimit = { ratePerSecond: perSecond, burst: Math.max(1, perSecond / 5) };
  const { ours, plain } = await raceAtLimit({
    label: `${perSecond}/s`,
    title: `rate limit ${perSecond}/s (burst ${rateLimit.burst}), render 2 ms, ${count} jobs, 16 workers`,
    rateLimit,
    count,
    workers: 16,
    oursName: "renderguard",
    stopAfterMs: sized(60_000, 2000),
  });
  target(`${perSecond}/s: renderguard sends fewer requests than the plain loop`, ours.requests < plain.requests, `${ours.requests} vs ${plain.requests}, 429s ${ours.status429} vs ${plain.status429}`);
}

// A backend service's few callers: 4 at once calling client.render() (the default limiter's
// concurrency), against 40/s with a burst of 2. All four get 429 together and wait out a whole
// second, so a second holds a handful of answers: fewer than the learner's tests read in one.
{
  const count = sized(200, 20);
  const callers = 4;
  const { ours, plain } = await raceAtLimit({
    label: `${callers} callers`,
    title: `rate limit 40/s (burst 2), render 2 ms, ${count} jobs, ${callers} callers, limiter defaults`,
    rateLimit: { ratePerSecond: 40, burst: 2 },
    count,
    workers: callers,
    oursName: `renderguard, ${callers} x render()`,
    stopAfterMs: sized(30_000, 2000),
  });
  target(`${callers} callers: renderguard wall <= the plain loop's`, ours.wallMs <= plain.wallMs, `${fmt(ours.wallMs / 1000)} s vs ${fmt(plain.wallMs / 1000)} s, ${plain.rendered}/${count} rendered`);
}
