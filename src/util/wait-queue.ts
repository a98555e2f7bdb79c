import { onAbort } from "./signals.js";

/** Jobs parked until something changes, first in first out; each honours its own cancellation. */
export class WaitQueue {
  // A ring-free deque: an array and the index of its head, so taking the first is O(1).
  private waiting: ((() => void) | undefined)[] = [];
  private head = 0;
  /** Grows on every wake call, so a job can tell that something changed while it was not waiting. */
  generation = 0;

  /**
   * Resolves when woken; rejects with the reason of `signal` on abort, leaving the queue.
   * `front` puts the job first in line, for one that was woken and must wait again.
   */
  wait(signal: AbortSignal, front = false): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const wake = () => {
        stopListening();
        resolve();
      };
      const stopListening = onAbort(signal, () => {
        const index = this.waiting.indexOf(wake, this.head);
        if (index >= 0) this.waiting[index] = undefined; // a hole, skipped when its turn comes
        reject(signal.reason);
      });
      if (front && this.head > 0) this.waiting[--this.head] = wake;
      else if (front) this.waiting.unshift(wake);
      else this.waiting.push(wake);
    });
  }

  /** Wakes the longest waiting job, if any. */
  wakeOne(): void {
    this.generation++;
    while (this.head < this.waiting.length) {
      const wake = this.waiting[this.head];
      this.waiting[this.head++] = undefined;
      if (wake) {
        this.compact();
        wake();
        return;
      }
    }
    this.compact();
  }

  wakeAll(): void {
    this.generation++;
    const woken = this.waiting.slice(this.head);
    this.waiting = [];
    this.head = 0;
    for (const wake of woken) wake?.();
  }

  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
  }
}
