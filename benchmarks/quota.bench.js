// Quota exhaustion with a long Retry-After: a quota of 500 renders an hour, 1,000 jobs, renders of
// 2 ms, 16 workers, every peer; once the quota is spent the service answers 429 quota_exceeded with
// Retry-After until the next period (an hour). A peer still going at 5 s (or 1.25 x renderguard's
// time, if later) is stopped: a client that sleeps through Retry-After would take an hour. Targets (renderguard, defaults): 500 rendered, at
// most one request after the render that spent the quota (the answer that said X-Renders-Remaining:
// 0), the other jobs failed within 100 ms each with retryAt, and the fastest peer that loses no job
// and bills nothing twice (jobs past the quota count as lost only if the quota was not spent).
import { comparePeers } from "./compare.js";
import { figures, job, target } from "./harness.js";
import { finish, fmt, sized } from "./support.js";

const count = sized(1000, 100);
const quota = { renders: count / 2, periodMs: 3_600_000 };
const jobs = Array.from({ length: count }, (_, i) => job(i));

/** Requests that arrived after the render that spent the quota (the quota-th billed, by arrival). */
function afterZero(run) {
  const spending = run.ledger.filter((e) => e.billed).sort((a, b) => a.seq - b.seq)[quota.renders - 1];
  return spending ? run.ledger.filter((e) => e.seq > spending.seq).length : 0;
}
const quotaSpent = (run) => run.ledger.filter((e) => e.billed).length >= quota.renders;

const [ours] = await comparePeers({
  title: `quota of ${quota.renders} an hour, then 429 quota_exceeded with Retry-After ~3600 s; render 2 ms; ${count} jobs, 16 workers`,
  scenario: { quota, renderDelayMs: 2 },
  jobs,
  stopAfterMs: sized(5000, 1000),
  scoring: { window: { label: "after 0", count: afterZero }, explained: quotaSpent },
});
const f = figures(ours);
const failed = ours.outcomes.filter((o) => o && !o.ok);
const slowest = Math.max(0, ...failed.map((o) => o.ms));
const withRetryAt = failed.filter((o) => o.retryAt instanceof Date).length;
target(`renderguard renders the quota (${quota.renders})`, f.rendered === quota.renders, `${f.rendered}`);
target("renderguard sends <= 1 request after X-Renders-Remaining hit 0", afterZero(ours) <= 1, `${afterZero(ours)}`);
target(
  "renderguard fails the jobs beyond the quota within 100 ms each, with retryAt",
  failed.length === count - quota.renders && slowest <= 100 && withRetryAt === failed.length,
  `${failed.length} failed (${[...f.failures.keys()].join(", ")}), slowest ${fmt(slowest, 1)} ms, ${withRetryAt} with retryAt`,
);
finish();
