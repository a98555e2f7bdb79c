import type { Clock } from "../clock.js";

/** A job's deadline, as `DeadlineTimer.start` took it; `expire` is cleared once the job ends. */
export interface DeadlineEntry {
  readonly at: number;
  expire: (() => void) | undefined;
}

const DISARMED = Symbol("deadline timer disarmed");

/** Ended entries kept before the list is compacted, at least: a long job must not pin every later one. */
const COMPACT_AFTER = 1024;

/**
 * Calls each job's `expire` when its deadline passes, on one clock sleep for all jobs rather than a
 * timer each (a timer a job, with the AbortController that clears it, cost more than the rest of a
 * render). Jobs given one timeout get their deadlines in the order they start, so the sleep waits
 * for the earliest deadline and is moved only when that one passes. It is cleared once no job is
 * left at the next turn of the event loop: an idle client holds no timer, and jobs that follow one
 * another at once keep the sleep rather than clear and set it again (two AbortSignals a job).
 */
export class DeadlineTimer {
  /** Entries by deadline, from `head` on; ended ones stay until passed over or compacted away. */
  private entries: DeadlineEntry[] = [];
  private head = 0;
  private live = 0;
  private sleep: { readonly at: number; readonly cancel: AbortController } | undefined;
  private idleCheck = false;
  /**
   * The signal of the idle check's sleep, which nothing cancels: one a timer, not one for all, or
   * the idle checks of many clients in one process would pile listeners on it (Node warns past 10).
   */
  private readonly uncancelled = AbortSignal.any([]);

  constructor(private readonly clock: Clock) {}

  /** Calls `expire` at `at` (milliseconds since the epoch), unless `end` is called first. */
  start(at: number, expire: () => void): DeadlineEntry {
    const entry: DeadlineEntry = { at, expire };
    const last = this.entries[this.entries.length - 1];
    if (last === undefined || last.at <= at) this.entries.push(entry);
    else this.entries.splice(this.indexAfter(at), 0, entry);
    this.live++;
    if (this.sleep === undefined || at < this.sleep.at) this.arm(at);
    return entry;
  }

  /** The job ended: its deadline no longer matters. */
  end(entry: DeadlineEntry): void {
    if (entry.expire === undefined) return; // expired already
    entry.expire = undefined;
    this.live--;
    if (this.live === 0) {
      this.entries = [];
      this.head = 0;
      this.disarmIfIdle();
    } else if (this.entries.length - this.head - this.live > Math.max(COMPACT_AFTER, this.live)) {
      this.entries = this.entries.slice(this.head).filter((e) => e.expire !== undefined);
      this.head = 0;
    }
  }

  /** The first index, from `head` on, whose deadline is later than `at`. */
  private indexAfter(at: number): number {
    let low = this.head;
    let high = this.entries.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.entries[mid] as DeadlineEntry).at <= at) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  private arm(at: number): void {
    this.disarm();
    const sleep = { at, cancel: new AbortController() };
    this.sleep = sleep;
    this.clock.sleep(at - this.clock.now(), sleep.cancel.signal).then(
      () => {
        if (this.sleep === sleep) this.fire(at);
      },
      () => undefined, // cleared: the jobs ended first, or an earlier deadline came
    );
  }

  /** Clears the sleep at the next turn of the event loop, if no job started meanwhile. */
  private disarmIfIdle(): void {
    if (this.idleCheck) return;
    this.idleCheck = true;
    this.clock.sleep(0, this.uncancelled).then(() => {
      this.idleCheck = false;
      if (this.live === 0) this.disarm();
    });
  }

  private disarm(): void {
    // A reason of our own: a default one builds a DOMException each time.
    this.sleep?.cancel.abort(DISARMED);
    this.sleep = undefined;
  }

  /** The sleep for `at` ended: every job due by then expires, and the sleep moves to the next deadline. */
  private fire(at: number): void {
    this.sleep = undefined;
    while (this.head < this.entries.length) {
      const entry = this.entries[this.head] as DeadlineEntry;
      if (entry.expire !== undefined && entry.at > at) break;
      this.head++;
      const expire = entry.expire;
      if (expire === undefined) continue;
      entry.expire = undefined;
      this.live--;
      expire();
    }
    this.armForNext();
  }

  /** Moves the sleep to the earliest deadline left, the one at `head`, if it is not already set for it. */
  private armForNext(): void {
    const next = this.entries[this.head]; // live: `fire` passed over every ended entry before it
    if (next === undefined) {
      this.entries = [];
      this.head = 0;
    } else if (this.sleep === undefined || next.at < this.sleep.at) {
      this.arm(next.at);
    }
  }
}

