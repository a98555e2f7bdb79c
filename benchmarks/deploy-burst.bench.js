// A burst of 500s after a deploy: every request gets internal_error from t=2 s to t=8 s (the
// deploy-burst scenario), renders of 5 ms, 360 jobs arriving steadily at 30/s (12 s of arrivals),
// 16 workers, every peer. Ideal: the last job's arrival plus its render. Targets (renderguard,
// defaults): every job rendered, at most 10 requests sent during the burst, and the fastest peer
// that loses no job and bills nothing twice. The smoke run squeezes the timeline to a twentieth
// (18 jobs), a peer stopped at 1.5 s (or 1.25 x renderguard's time, if later).
import { builtinScenarios } from "../dist/server/index.js";
import { comparePeers } from "./compare.js";
import { figures, job, target } from "./harness.js";
import { finish, fmt, sized } from "./support.js";

const timeScale = sized(1, 1 / 20);
const arrivalsPerSecond = 30;
const count = Math.round(12 * timeScale * arrivalsPerSecond);
const jobs = Array.from({ length: count }, (_, i) => job(i));
const [burst] = builtinScenarios["deploy-burst"].faults;
const outage = { fromMs: burst.fromMs * timeScale, toMs: burst.toMs * timeScale };
const renderDelayMs = 5;
const scenario = { ...builtinScenarios["deploy-burst"], renderDelayMs, faults: [{ ...burst, ...outage }] };
const during = (run) => run.ledger.filter((e) => e.elapsedMs >= outage.fromMs && e.elapsedMs < outage.toMs).length;
const span = `t=${fmt(outage.fromMs / 1000, 1)} s to ${fmt(outage.toMs / 1000, 1)} s`;

const [ours] = await comparePeers({
  title: `deploy burst: every request 500 internal_error from ${span}; render ${renderDelayMs} ms; ${count} jobs arriving at ${arrivalsPerSecond}/s, 16 workers`,
  scenario,
  jobs,
  arrivalsPerSecond,
  ideal: { name: "ideal (last arrival)", wallMs: ((count - 1) * 1000) / arrivalsPerSecond + renderDelayMs },
  stopAfterMs: sized(40_000, 1500),
  scoring: { window: { label: "in burst", count: during } },
  chart: {
    file: "deploy-burst.svg",
    title: `A burst of 500s after a deploy: requests per second, ${count} jobs arriving at ${arrivalsPerSecond}/s`,
    subtitle: `Shaded: every request gets 500 internal_error (${span}).`,
    band: { from: outage.fromMs / 1000, to: outage.toMs / 1000, label: "500s" },
  },
});
const f = figures(ours);
target("renderguard renders every job", f.rendered === count, `${f.rendered}/${count}`);
target("renderguard sends <= 10 requests during the burst", during(ours) <= 10, `${during(ours)}`);
finish();
