// Mixed faults: 500 jobs, 16 workers, every peer. 5 % of requests rate_limited with an HTTP-date
// Retry-After, 5 % internal_error (no Retry-After), renders of 10-20 ms; 3 % of jobs fail to render
// (422 render_failed, billed: never to be retried), 1 % always time out (408 after 300 ms), 1 % are
// over the 4 KiB body limit (400). Targets (renderguard, defaults): every renderable job rendered
// (not 400, not render_failed, not always timing out), and the fastest peer that loses no job and
// bills nothing twice. Clients that retry a 408 five times with exponential backoff need 15-35 s to
// give up on the always-timing-out jobs, so a peer still going at 15 s (or 1.25 x renderguard's time,
// if later) is stopped; renderguard at 30 s.
import { comparePeers } from "./compare.js";
import { job, target } from "./harness.js";
import { finish, sized } from "./support.js";

const count = sized(500, 80);
const maxBodyBytes = 4096;

/** What each job is made to do, by index: deterministic, so every contender gets the same work. */
const kindOf = (i) => (i % 33 === 16 ? "fail" : i % 100 === 50 ? "timeout" : i % 100 === 75 ? "oversize" : "ok");
const extra = {
  ok: "",
  fail: "<!-- render:fail -->",
  timeout: "<!-- render:timeout -->",
  oversize: `<p>${"x".repeat(maxBodyBytes)}</p>`,
};
const jobs = Array.from({ length: count }, (_, i) => job(i, extra[kindOf(i)]));
const renderable = jobs.map((_, i) => i).filter((i) => kindOf(i) === "ok");

const scenario = {
  quota: { renders: 1_000_000, periodMs: 86_400_000 },
  renderDelayMs: 10,
  renderJitterMs: 10,
  renderTimeoutMs: 300,
  maxBodyBytes,
  retryAfter: { format: "http-date" },
  faults: [
    { fault: "rate_limited", probability: 0.05, retryAfterMs: 1000 },
    { fault: "internal_error", probability: 0.05 },
  ],
};

const kinds = ["fail", "timeout", "oversize"].map((k) => `${jobs.filter((_, i) => kindOf(i) === k).length} ${k}`);
const [ours] = await comparePeers({
  title: `mixed faults: 5 % rate_limited (HTTP-date Retry-After), 5 % internal_error, render 10-20 ms; ${count} jobs (${kinds.join(", ")}), 16 workers`,
  scenario,
  jobs,
  stopAfterMs: sized(15_000, 2000),
  scoring: { unrenderable: (i) => kindOf(i) !== "ok" },
});
const missing = renderable.filter((i) => !ours.outcomes[i]?.ok);
target(
  "renderguard renders every renderable job",
  missing.length === 0,
  `${renderable.length - missing.length}/${renderable.length}${missing.length ? `; failed: ${[...new Set(missing.map((i) => ours.outcomes[i]?.code))].join(", ")}` : ""}`,
);
finish();
