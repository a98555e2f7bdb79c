// The scenarios and batch sizes of the three rate benchmarks, shared with spread.js so that the
// spread it quotes is of the same runs.
import { builtinScenarios } from "../dist/server/index.js";
import { serverStartedAt } from "./harness.js";
import { sized } from "./support.js";

/** `rate-limit`: the reference server's rate-limit scenario (200/s, a burst of 20), 2,200 jobs. */
export const rateLimitRun = { scenario: builtinScenarios["rate-limit"], count: sized(2200, 80) };

const stepped = builtinScenarios["rate-step"];
const timeScale = sized(1, 1 / 10); // the smoke run squeezes the timeline to a tenth
/** `rate-step`: 200/s, 50/s from 3 s to 7 s, then 200/s (the rate-step scenario); renders of 2 ms; 2,400 jobs. */
export const rateStepRun = {
  scenario: {
    ...stepped,
    rateLimit: { ...stepped.rateLimit, steps: stepped.rateLimit.steps.map((s) => ({ ...s, fromMs: s.fromMs * timeScale })) },
    renderDelayMs: 2,
  },
  count: sized(2400, 120),
};

const liftMs = sized(5000, 500); // the smoke run squeezes the timeline to a tenth
/**
 * `rate-lift`: 50/s with a burst of 5 until `liftMs`, then no limit, while 3 % of requests get
 * rate_limited (Retry-After 1 s) at random all along; renders of 10 ms; 3,000 jobs.
 */
export const rateLiftRun = {
  scenario: {
    rateLimit: { ratePerSecond: 50, burst: 5, steps: [{ fromMs: liftMs, ratePerSecond: 1_000_000 }] },
    quota: { renders: 1_000_000, periodMs: 24 * 3_600_000 },
    renderDelayMs: 10,
    faults: [{ fault: "rate_limited", probability: 0.03, retryAfterMs: 1000 }],
  },
  count: sized(3000, 80),
  liftMs,
  /** Renders the server answered in the `liftMs` after the lift. */
  rendersAfterLift(run) {
    const start = serverStartedAt(run) + liftMs;
    return run.ledger.filter((e) => e.status === 200 && e.at >= start && e.at < start + liftMs).length;
  },
};
