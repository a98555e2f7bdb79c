import { freshRecord, type LimiterRecord } from "../../src/policies/limiter/limiter-state.js";
import { type Contender, watchedFleet } from "./contenders.js";
import type { Scenario } from "./families.js";
import { limiterGate, type SendGate } from "./send-gate.js";
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

/** The learner's state when sends left, and how many of those sends the limit refused. */
export interface RefusedWhen {
  readonly state: string;
  readonly limit429: number;
}

/** Before the learner's first cut: every place sending into a limit nobody told it of. */
export const FIRST_CONTACT = "first contact";

/** The learner's state in a few words: its mode, its limit, and whether a cut is on trial. */
function stateOf({ sendRate }: LimiterRecord): string {
  const limit = sendRate.limit === null ? "unlimited" : `${sendRate.limit.toFixed(2)}/s`;
  return `${sendRate.phase.mode} ${limit}${sendRate.trial ? " (cut on trial)" : ""}`;
}

/** `stateOf` without the limit: what the learner was doing, to sum a run's 429s by. */
function modeOf({ sendRate }: LimiterRecord): string {
  const mode = sendRate.phase.mode === "free" ? "unlimited" : sendRate.phase.mode;
  return `${mode}${sendRate.trial ? " (cut on trial)" : ""}`;
}

/**
 * Runs `scenario` with renderguard's limiter as `simulate` does, and returns each change of the
 * learner's state with the time it came (how to see why a seed pays its 429s or its wall time), and
 * the limit's own 429s by the learner's state when their sends left.
 */
export function traceRun(scenario: Scenario, seed: number): { readonly run: RunResult; readonly lines: readonly TraceLine[]; readonly refusedWhen: readonly RefusedWhen[] } {
  const lines: TraceLine[] = [];
  let refused = 0;
  let last = stateOf(freshRecord());
  let shared: LimiterRecord | undefined;
  let cut = false;
  const watch = (record: LimiterRecord, now: number, limited: boolean) => {
    shared = record;
    cut ||= record.sendRate.limit !== null;
    if (limited) refused++;
    const state = stateOf(record);
    if (state !== last) lines.push({ at: now - START, refused, from: last, to: state });
    last = state;
  };
  const counts = new Map<string, number>();
  const when = () => (shared && cut ? modeOf(shared) : FIRST_CONTACT);
  const traced: Contender = {
    name: "renderguard",
    gates: (processes, concurrency) => watchedFleet(processes, concurrency, watch).map((store) => counted(limiterGate(store), when, counts)),
  };
  const run = simulate(scenario, traced, seed);
  return { run, lines, refusedWhen: [...counts].map(([state, limit429]) => ({ state, limit429 })) };
}

/** `gate`, counting in `counts` each of the limit's 429s by what `when` said as its send was admitted. */
function counted(gate: SendGate, when: () => string, counts: Map<string, number>): SendGate {
  const admittedWhen = new WeakMap<object, string>();
  return {
    get paused() {
      return gate.paused;
    },
    admit(now) {
      const admission = gate.admit(now);
      if (admission.kind === "send") admittedWhen.set(admission.ticket as object, when());
      return admission;
    },
    leave: (ticket, now) => gate.leave(ticket, now),
    settle(ticket, answer, resend, now) {
      if (answer.kind === "limit_429") {
        const state = admittedWhen.get(ticket as object) ?? FIRST_CONTACT;
        counts.set(state, (counts.get(state) ?? 0) + 1);
      }
      gate.settle(ticket, answer, resend, now);
    },
  };
}
