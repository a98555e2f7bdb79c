// The CLI's batch, as a new user ran it: `renderguard batch jobs.jsonl --concurrency 16`, 2,000 jobs,
// renders of 60 to 120 ms, a limit of 100/s (a burst of 20, as the reference server's rate-limit
// and rate-step scenarios have), 3 % of requests answered 429 rate_limited (Retry-After 1 s) and
// 3 % 500 internal_error, both at random. renderguard is wired as src/cli/batch-command.ts wires
// it: `limiter.concurrency` 16 and `renderMany` at 2 x 16 = 32 (jobs waiting out a Retry-After
// hold no sender back), its defaults otherwise. Server seeds 1 to 5, a fresh client and server for
// each. Targets, in every seed: wall <= 1.25 x jobs / limit (25 s); the limit's own 429s <= 3 % of
// jobs; every job rendered or failed with a classified code, no body billed twice. Beside it, for
// context and not a target, p-retry with 16 workers (peers/p-retry.js: no Retry-After) on the same
// seeds: its wall and its limit's 429s as ratios to renderguard's.
//
// The limit's 429s and the scattered ones both carry `rate_limited`; the ledger tells them apart by
// the wait it records (`retryAfterMs`, before rounding): a scattered one asks for the fault's
// 1,000 ms, the token bucket for the time until its next token, at most 1 / rate = 10 ms. A 429
// that is neither stops the benchmark rather than being guessed at.
import { warmUpJobs, warmUpScenario } from "./compare.js";
import { figures, job, runContender, target } from "./harness.js";
import * as pRetry from "./peers/p-retry.js";
import * as renderguard from "./peers/renderguard.js";
import { finish, fmt, sized } from "./support.js";

const concurrency = 16; // --concurrency 16
const count = sized(2000, 100);
const seeds = sized([1, 2, 3, 4, 5], [1]);
const ratePerSecond = 100;
const scatteredRetryAfterMs = 1000;
const scenario = {
  rateLimit: { ratePerSecond, burst: 20 },
  quota: { renders: 1_000_000, periodMs: 24 * 3_600_000 }, // as the built-in scenarios: X-Renders-Remaining
  renderDelayMs: 60,
  renderJitterMs: 60,
  faults: [
    { fault: "rate_limited", probability: 0.03, retryAfterMs: scatteredRetryAfterMs },
    { fault: "internal_error", probability: 0.03 },
  ],
};
const jobs = Array.from({ length: count }, (_, i) => job(i));
const paceMs = (count / ratePerSecond) * 1000; // jobs / limit
const wallLimitMs = 1.25 * paceMs;
const limit429Share = 0.03;

const contenders = {
  renderguard: {
    name: "renderguard",
    peer: renderguard.renderBatch,
    workers: 2 * concurrency, // batch-command.ts: renderMany's concurrency
    runOptions: { options: { limiter: { concurrency } } },
    stopAfterMs: sized(4 * wallLimitMs, 10_000),
  },
  pRetry: { name: "p-retry", peer: pRetry.renderJobs, workers: concurrency, runOptions: {}, stopAfterMs: sized(6 * wallLimitMs, 10_000) },
};

/** A contender's timed run on `seed`, after the warm-up every benchmark's contender gets. */
async function runOnce({ name, peer, workers, runOptions, stopAfterMs }, seed) {
  await runContender({ name: "warm-up", peer, scenario: warmUpScenario, jobs: warmUpJobs, workers, runOptions });
  return runContender({ name, peer, scenario, seed, jobs, workers, runOptions, stopAfterMs });
}

/**
 * The run's 429s by source: `limit` (the token bucket: a wait of at most one token's time) and
 * `scattered` (the fault window: its Retry-After exactly). Throws on a 429 that is neither.
 */
function limited(run) {
  const tokenMs = 1000 / ratePerSecond;
  let limit = 0;
  let scattered = 0;
  for (const e of run.ledger.filter((entry) => entry.status === 429)) {
    if (e.code === "rate_limited" && e.retryAfterMs === scatteredRetryAfterMs) scattered++;
    else if (e.code === "rate_limited" && e.retryAfterMs > 0 && e.retryAfterMs <= tokenMs + 1e-6) limit++;
    else throw new Error(`${run.name}: a 429 the ledger does not place (code ${e.code}, retryAfterMs ${e.retryAfterMs}, seq ${e.seq})`);
  }
  return { limit, scattered };
}

/** Codes renderguard gives a failure it has classified (src/core/spec.ts, src/core/errors.ts), but `aborted` and `unknown_error`. */
const classified = new Set([
  ...["invalid_request", "invalid_api_key", "payment_required", "not_found", "render_timeout", "unsupported_file"],
  ...["render_failed", "extraction_failed", "rate_limited", "quota_exceeded", "demo_busy", "internal_error"],
  ...["network_error", "response_lost", "upstream_unavailable", "upstream_error", "response_too_large", "unexpected_response"],
  ...["response_incomplete", "setup_failed", "circuit_open", "quota_wait_too_long", "paused_too_long", "budget_exhausted"],
]);

/** One run's figures for the lines and targets. */
function summary(run) {
  const f = figures(run);
  const { limit, scattered } = limited(run);
  const unclassified = run.jobs.filter((_, i) => !run.outcomes[i] || (!run.outcomes[i].ok && !classified.has(String(run.outcomes[i].code)))).length;
  return { ...f, limit, scattered, unclassified, stopped: run.stopped };
}

const failuresText = (s) => (s.failures.size ? `, failed ${[...s.failures].map(([code, n]) => `${code} x${n}`).join(" ")}` : "");
const wallText = (s) => `${s.stopped ? ">" : ""}${fmt(s.wallMs / 1000)} s`;

console.log(
  `CLI batch (--concurrency ${concurrency}: limiter ${concurrency}, renderMany ${2 * concurrency}): ${count} jobs, ` +
    `limit ${ratePerSecond}/s (burst ${scenario.rateLimit.burst}), render 60-120 ms, 3 % rate_limited (Retry-After 1 s) ` +
    `and 3 % internal_error at random; jobs / limit ${fmt(paceMs / 1000, 1)} s; seeds ${seeds.join(", ")}`,
);
const ours = [];
for (const seed of seeds) {
  const [rg, pr] = [summary(await runOnce(contenders.renderguard, seed)), summary(await runOnce(contenders.pRetry, seed))];
  ours.push({ seed, ...rg });
  console.log(
    `  seed ${seed}: renderguard wall ${wallText(rg)}, ${fmt(rg.wallMs / paceMs)} x jobs/limit, limit 429s ${rg.limit}, ` +
      `scattered 429s ${rg.scattered}, 500s ${rg.status500}, rendered ${rg.rendered}/${count}` +
      `${failuresText(rg)}, billed>1 ${rg.billedTwice}, early ${rg.early}, sent ${rg.requests}`,
  );
  console.log(
    `          p-retry (16 workers, baseline) wall ${wallText(pr)} = ${fmt(pr.wallMs / rg.wallMs)} x renderguard's, ` +
      `limit 429s ${pr.limit} = ${rg.limit ? `${fmt(pr.limit / rg.limit)} x` : "n/a:"} renderguard's, scattered 429s ${pr.scattered}, ` +
      `500s ${pr.status500}, rendered ${pr.rendered}/${count}${failuresText(pr)}, billed>1 ${pr.billedTwice}, sent ${pr.requests}`,
  );
}

const each = (figure) => ours.map((s) => `${s.seed}: ${figure(s)}`).join("; ");
target(
  `renderguard wall <= 1.25 x jobs / limit (${fmt(wallLimitMs / 1000, 1)} s) in every seed`,
  ours.every((s) => !s.stopped && s.wallMs <= wallLimitMs),
  each((s) => `${wallText(s)} ${fmt(s.wallMs / paceMs)} x`),
);
target(
  `renderguard limit 429s <= 3 % of jobs (${Math.floor(limit429Share * count)}) in every seed`,
  ours.every((s) => s.limit <= limit429Share * count),
  each((s) => `${s.limit} = ${fmt((100 * s.limit) / count, 1)} %`),
);
target(
  "renderguard every job rendered or failed classified, none billed twice, in every seed",
  ours.every((s) => !s.stopped && s.unclassified === 0 && s.billedTwice === 0 && s.rendered + s.failed === count),
  each((s) => `${s.rendered} rendered, ${s.failed} failed, ${s.unclassified} unclassified, ${s.billedTwice} billed>1`),
);
finish();
