// The scenarios and batch sizes of the two rate benchmarks, shared with spread.js so that the
// spread it quotes is of the same runs.
import { builtinScenarios } from "../dist/server/index.js";
import { sized } from "./support.js";

/** `rate-limit`: the reference server's rate-limit scenario (200/s, a burst of 20), 2,200 jobs. */
export const rateLimitRun = { scenario: builtinScenarios["rate-limit"], count: sized(2200, 300) };

const stepped = builtinScenarios["rate-step"];
const timeScale = sized(1, 1 / 6); // the smoke run squeezes the timeline to a sixth
/** `rate-step`: 200/s, 50/s from 3 s to 7 s, then 200/s (the rate-step scenario); renders of 2 ms; 2,400 jobs. */
export const rateStepRun = {
  scenario: {
    ...stepped,
    rateLimit: { ...stepped.rateLimit, steps: stepped.rateLimit.steps.map((s) => ({ ...s, fromMs: s.fromMs * timeScale })) },
    renderDelayMs: 2,
  },
  count: sized(2400, 400),
};
