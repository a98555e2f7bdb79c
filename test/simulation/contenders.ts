import { ConcurrencyCap } from "../../src/policies/limiter/concurrency-cap.js";
import { freshRecord, type LimiterRecord, settle, snapshotOf, take } from "../../src/policies/limiter/limiter-state.js";
import type { LimiterStore } from "../../src/policies/limiter/limiter-store.js";
import { memoryLimiterStore } from "../../src/policies/limiter/memory-store.js";
import { AwsAdaptiveRateLimiter } from "./aws-adaptive.js";
import { awsGate, limiterGate, openGate, type SendGate } from "./send-gate.js";

/** Limiter stores for a fleet of `processes`, each capped at `concurrency` sends in flight. */
export type FleetFactory = (processes: number, concurrency: number) => LimiterStore[];

/**
 * The renderguard limiter one process uses, capped at `concurrency` sends in flight: the one place
 * the simulation builds it, so a change of its settings is made here only.
 */
export function renderguardLimiter(concurrency: number): LimiterStore {
  return memoryLimiterStore({ concurrency, minRate: 1 });
}

/**
 * A fleet's processes sharing one limiter state, as they do through the Redis store: one record
 * and one GCRA pace that every process reads and writes at once (Redis's atomic scripts, without
 * the round trips), the fleet's sends in flight counted together, each process with its own
 * concurrency cap.
 */
export const sharedMemoryFleet: FleetFactory = (processes, concurrency) => watchedFleet(processes, concurrency, () => {});

/**
 * `sharedMemoryFleet`, telling `watch` of the shared record after each answer is settled, with the
 * answer's time and whether it was a 429: what `trace.ts` reads the learner's decisions from.
 */
export function watchedFleet(processes: number, concurrency: number, watch: (record: LimiterRecord, now: number, limited: boolean) => void): LimiterStore[] {
  const record = freshRecord();
  const pace = { tat: 0 };
  let inFlight = 0;
  return Array.from({ length: processes }, (): LimiterStore => {
    const cap = new ConcurrencyCap(concurrency);
    return {
      acquire(now) {
        if (cap.full) return { reason: "concurrency", until: undefined };
        const taken = take(record, pace, now, inFlight);
        if ("seq" in taken) {
          cap.take();
          inFlight++;
        }
        return taken;
      },
      release(ticket, seen, now) {
        cap.release(seen.effect);
        inFlight--;
        const changes = settle(record, ticket, seen, now, 1);
        watch(record, now, seen.effect === "slow_down");
        return changes;
      },
      snapshot: (now) => snapshotOf(record, now, cap.inFlight, cap.limit),
    };
  });
}

/** A way of sending, judged by the simulation. */
export interface Contender {
  readonly name: string;
  /** One gate for each of `processes`, each running `concurrency` sends at most, created at `now`. */
  gates(processes: number, concurrency: number, now: number): SendGate[];
}

/** renderguard's limiter; a fleet's processes get their stores from `fleet`. */
export function renderguardContender(fleet: FleetFactory = sharedMemoryFleet): Contender {
  return {
    name: "renderguard",
    gates: (processes, concurrency) =>
      processes === 1 ? [limiterGate(renderguardLimiter(concurrency))] : fleet(processes, concurrency).map(limiterGate),
  };
}

/** A plain retry loop with no limiter: the wall time to match. */
export const loopContender: Contender = {
  name: "loop",
  gates: (processes) => Array.from({ length: processes }, openGate),
};

/** The AWS SDK v3 adaptive rate limiter, one a process. */
export const awsContender: Contender = {
  name: "aws",
  gates: (processes, _concurrency, now) =>
    Array.from({ length: processes }, () => awsGate(new AwsAdaptiveRateLimiter(now))),
};
