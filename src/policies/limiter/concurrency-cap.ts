import type { Observation } from "./limiter-state.js";

/** Accepted sends that raise a lowered cap by one. */
const SUCCESSES_PER_STEP = 10;

/**
 * This process's sends in flight, and how many may be: `concurrency`, lowered by one for each
 * `demo_busy` (to one fewer than were in flight, at least one), raised back by one for every
 * `SUCCESSES_PER_STEP` sends the service accepted.
 */
export class ConcurrencyCap {
  private sending = 0;
  private cap: number;
  private successesSinceCut = 0;

  constructor(private readonly concurrency: number) {
    this.cap = concurrency;
  }

  get inFlight(): number {
    return this.sending;
  }

  get limit(): number {
    return this.cap;
  }

  get full(): boolean {
    return this.sending >= this.cap;
  }

  take(): void {
    this.sending++;
  }

  /** Gives back a slot taken for a send that did not go. */
  cancel(): void {
    this.sending--;
  }

  /** A send finished with `effect`; returns the new cap when that changed it. */
  release(effect: Observation["effect"]): number | undefined {
    this.sending--;
    if (effect === "fewer_concurrent") {
      this.cap = Math.max(1, Math.min(this.cap, this.sending + 1) - 1);
      this.successesSinceCut = 0;
      return this.cap;
    }
    if (effect !== "accepted" || ++this.successesSinceCut < SUCCESSES_PER_STEP || this.cap >= this.concurrency) return undefined;
    this.cap++;
    this.successesSinceCut = 0;
    return this.cap;
  }
}
