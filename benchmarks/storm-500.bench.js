// Target: a storm of 500 internal_error (every request, the whole run); 100 jobs started at once
// (100 workers), stopped after 3 s (the client closed, the loop aborted). renderguard with
// breaker onOpen "fail" lets at most 12 requests reach the service. For comparison: renderguard
// with the default onOpen "wait", and a plain retry loop (undici, 5 retries, backoff with jitter).
// The smoke run stops each after 1.5 s.
import { figures, job, printTable, runContender, target } from "./harness.js";
import * as plainUndici from "./peers/plain-undici.js";
import * as renderguard from "./peers/renderguard.js";
import { sized } from "./support.js";

const count = 100;
const runMs = sized(3000, 1500);
const jobs = Array.from({ length: count }, (_, i) => job(i));
const scenario = { faults: [{ fault: "internal_error" }] };

const runs = [];
for (const [name, peer, runOptions] of [
  ["plain-undici (baseline)", plainUndici.renderJobs, {}],
  ["renderguard onOpen fail", renderguard.renderJobs, { options: { breaker: { onOpen: "fail" } } }],
  ["renderguard onOpen wait", renderguard.renderJobs, {}],
]) {
  runs.push(await runContender({ name, peer, scenario, jobs, workers: count, runOptions, stopAfterMs: runMs }));
}

printTable(`storm: every request 500 internal_error; ${count} jobs at once (100 workers), stopped after ${runMs / 1000} s`, runs, "plain-undici (baseline)");
const [baseline, fail, wait] = runs.map(figures);
console.log(`  requests that reached the service: plain-undici ${baseline.requests}, renderguard fail ${fail.requests}, renderguard wait ${wait.requests}`);
target('renderguard onOpen "fail": <= 12 requests reach the service', fail.requests <= 12, `${fail.requests}`);
