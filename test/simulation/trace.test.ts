import { describe, expect, it } from "vitest";
import { renderguardContender } from "./contenders.js";
import { describeScenario, families } from "./families.js";
import { simulate } from "./simulate.js";
import { drawScenario } from "./suite.js";
import { FIRST_CONTACT, traceRun } from "./trace.js";

/**
 * `SIM_TRACE=<family>:<seed>` (the family's number in its name, as the suite's tables and their
 * worst seeds show it) prints that run's trace: `SIM_TRACE=7:93 npm run sim:trace`.
 */
const asked = process.env.SIM_TRACE;

function familyNumbered(number: number) {
  const family = families.find((f) => f.name.startsWith(`${number} `));
  if (!family) throw new Error(`No family ${number}: the families are ${families.map((f) => f.name).join("; ")}.`);
  return family;
}

describe("a trace of the learner's decisions", () => {
  it("is of the very run the suite judges, one process or a fleet", () => {
    for (const number of [1, 8]) {
      for (let seed = 1; seed <= 3; seed++) {
        const scenario = drawScenario(familyNumbered(number), seed);
        const { run, lines, refusedWhen } = traceRun(scenario, seed);
        expect(run, `family ${number}, seed ${seed}`).toEqual(simulate(scenario, renderguardContender(), seed));
        // Each of the limit's 429s is counted once, by the learner's state when its send left.
        expect(refusedWhen.reduce((sum, r) => sum + r.limit429, 0)).toBe(run.limit429);
        expect(refusedWhen.some((r) => r.state === FIRST_CONTACT && r.limit429 > 0)).toBe(true);
        // Every family numbered here has a limit: the learner leaves "unlimited" at least once.
        expect(lines.some((line) => line.from.includes("unlimited") && !line.to.includes("unlimited"))).toBe(true);
      }
    }
  });

  it.runIf(asked !== undefined)(`of SIM_TRACE=${asked ?? ""}`, () => {
    const match = asked?.match(/^(\d+):(\d+)$/);
    if (!match) throw new Error(`SIM_TRACE is <family>:<seed>, two numbers, as in SIM_TRACE=7:93; it was "${asked}".`);
    const [, number, seed] = match;
    const scenario = drawScenario(familyNumbered(Number(number)), Number(seed));
    const { run, lines, refusedWhen } = traceRun(scenario, Number(seed));
    console.log(`${describeScenario(scenario)}, seed ${seed}`);
    for (const line of lines) console.log(`${(line.at / 1000).toFixed(2).padStart(9)} s  ${String(line.refused).padStart(6)} 429s  ${line.from} -> ${line.to}`);
    console.log(`wall ${(run.wall / 1000).toFixed(1)} s; ${run.limit429} of the limit's 429s and ${run.scattered429} scattered for ${run.jobs} jobs`);
    const by = refusedWhen.map((r) => `${r.state} ${r.limit429}`).join(", ");
    console.log(`the limit's 429s by the learner's state when their sends left: ${by || "none"}`);
    expect(run.done + run.failed).toBe(run.jobs);
  });
});
