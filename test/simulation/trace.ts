import { freshRecord, type LimiterRecord } from "../../src/policies/limiter/limiter-state.js";
import { type Contender, watchedFleet } from "./contenders.js";
import type { Scenario } from "./families.js";
import { limiterGate } from "./send-gate.js";
import { type RunResult, START, simulate } from "./simulate.js";

/** One change of the learner's mode, limit or trial, as a run's answers made it. */
export interface TraceLine {
  /** Milliseconds since the run began. */
  readonly at: number;
  /** 429s answered so far, the limit's and scattered ones alike (the learner cannot tell them apart). */
  readonly refused: number;
  readonly from: string;
  readonly to: string;
}

/** The learner's state in a few words: its mode, its limit, and whether a cut is on trial. */
function stateOf({ sendRate }: LimiterRecord): string {
  const limit = sendRate.limit === null ? "unlimited" : `${sendRate.limit.toFixed(2)}/s`;
  return `${sendRate.phase.mode} ${limit}${sendRate.trial ? " (cut on trial)" : ""}`;
}

/**
 * Runs `scenario` with renderguard's limiter as `simulate` does, and returns each change of the
 * learner's state with the time it came: how to see why a seed pays its 429s or its wall time.
 */
export function traceRun(scenario: Scenario, seed: number): { readonly run: RunResult; readonly lines: readonly TraceLine[] } {
  const lines: TraceLine[] = [];
  let refused = 0;
  let last = stateOf(freshRecord());
  const watch = (record: LimiterRecord, now: number, limited: boolean) => {
    if (limited) refused++;
    const state = stateOf(record);
    if (state !== last) lines.push({ at: now - START, refused, from: last, to: state });
    last = state;
  };
  const traced: Contender = { name: "renderguard", gates: (processes, concurrency) => watchedFleet(processes, concurrency, watch).map(limiterGate) };
  const run = simulate(scenario, traced, seed);
  return { run, lines };
}
