import type { Clock } from "../../src/util/clock.js";

interface Sleeper {
  readonly at: number;
  readonly resolve: () => void;
}

/** A clock that moves only when a test says so. */
export class FakeClock implements Clock {
  private time: number;
  private sleepers: Sleeper[] = [];
  private waiters: (() => void)[] = [];

  constructor(start = Date.UTC(2026, 10, 22, 12, 0, 0)) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  /** Sleeps currently pending. */
  get pending(): number {
    return this.sleepers.length;
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const sleeper: Sleeper = {
        at: this.time + Math.max(0, ms),
        resolve: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.sleepers.push(sleeper);
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  /** Resolves once some sleep is pending. */
  async whenSleeping(): Promise<void> {
    for (let i = 0; i < 50 && this.sleepers.length === 0; i++) await Promise.resolve();
    if (this.sleepers.length > 0) return;
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** When the earliest pending sleep falls due, or undefined when none is pending. */
  get nextDue(): number | undefined {
    return this.sleepers.length === 0 ? undefined : Math.min(...this.sleepers.map((s) => s.at));
  }

  /** Moves time on by `ms`, waking every sleep that falls due, in order. */
  advance(ms: number): void {
    this.time += ms;
    const due = this.sleepers.filter((s) => s.at <= this.time).sort((a, b) => a.at - b.at);
    this.sleepers = this.sleepers.filter((s) => s.at > this.time);
    for (const sleeper of due) sleeper.resolve();
  }
}
