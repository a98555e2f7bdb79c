import { SimClient, type Tally } from "./client.js";
import type { Contender } from "./contenders.js";
import { EventHeap } from "./event-heap.js";
import type { Scenario } from "./families.js";
import { mulberry32, substream } from "./prng.js";
import { SimService } from "./service.js";

/** What one contender's run of one scenario came to. */
export interface RunResult extends Tally {
  readonly jobs: number;
  /** Milliseconds from the first send until the last job finished. */
  readonly wall: number;
  /** `paused` changes the contender's limiter reported. */
  readonly paused: number;
  /** The most the service accepted over its burst plus the rate's integral (0 or less), or -Infinity with no limit. */
  readonly serviceExcess: number;
}

/** The simulation's time zero: a plausible epoch time, since the limiters read times as dates. */
export const START = Date.UTC(2026, 0, 1);

/**
 * Runs `scenario` with `contender` to the last job. `seed` fixes every random draw: the service's
 * stream and each process's, so every contender meets the same scenario with the same seed.
 */
export function simulate(scenario: Scenario, contender: Contender, seed: number): RunResult {
  const heap = new EventHeap(START);
  const service = new SimService(scenario.service, START, mulberry32(substream(seed, 0)));
  const tally: Tally = { done: 0, failed: 0, sends: 0, limit429: 0, scattered429: 0, internalErrors: 0, earlyResends: 0, finishedAt: START };
  const gates = contender.gates(scenario.processes, scenario.concurrency, START);
  gates.forEach((gate, i) => {
    const random = mulberry32(substream(seed, i + 1));
    new SimClient(heap, service, gate, random, scenario.shape, scenario.concurrency, scenario.jobsPerProcess, tally).start();
  });
  heap.run();
  return {
    ...tally,
    jobs: scenario.jobsPerProcess * scenario.processes,
    wall: tally.finishedAt - START,
    paused: gates.reduce((sum, gate) => sum + gate.paused, 0),
    serviceExcess: service.maxExcess,
  };
}
