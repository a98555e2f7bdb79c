import type { Clock } from "../clock.js";

/** Jobs parked until something changes, first in first out; each honours its own signal. */
export class WaitQueue {
  private readonly waiting: (() => void)[] = [];
  /** Grows on every wake call, so a job can tell that something changed while it was not waiting. */
  generation = 0;

  get size(): number {
    return this.waiting.length;
  }

  /** Resolves when woken; rejects with `signal.reason` on abort, leaving the queue. */
  wait(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const wake = () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        const index = this.waiting.indexOf(wake);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(wake);
    });
  }

  /** Wakes the longest waiting job, if any. */
  wakeOne(): void {
    this.generation++;
    this.waiting.shift()?.();
  }

  wakeAll(): void {
    this.generation++;
    for (const wake of this.waiting.splice(0)) wake();
  }
}

/**
 * Waits for whichever comes first: `ms` on the clock, or a wake from `queue`. The loser is
 * cancelled so no timer or queue entry is left behind.
 */
export async function sleepOrWake(
  clock: Clock,
  ms: number,
  queue: WaitQueue,
  signal: AbortSignal,
): Promise<void> {
  const done = new AbortController();
  const both = AbortSignal.any([signal, done.signal]);
  try {
    await Promise.race([clock.sleep(ms, both), queue.wait(both)]);
  } finally {
    done.abort();
  }
  signal.throwIfAborted();
}
