import { type Clock, timerOf } from "../../util/clock.js";

/** A job's deadline, as `DeadlineTimer.start` took it; `expire` is cleared once the job ends. */
export interface DeadlineEntry {
  readonly at: number;
  expire: (() => void) | undefined;
}

/** Ended entries kept before the list is compacted, at least: a long job must not pin every later one. */
const COMPACT_AFTER = 1024;

/**
 * Calls each job's `expire` when its deadline passes, on one timer for all jobs rather than one
 * each (a timer a job cost more than the rest of a render). Jobs given one timeout get their
 * deadlines in the order they start, so the timer waits for the earliest deadline and is moved
 * only when that one passes. It is cleared once no job is left at the next turn of the event loop:
 * an idle client holds no timer, and jobs that follow one another at once keep it rather than
 * clear and set it again.
 */
export class DeadlineTimer {
  /** Entries by deadline, from `head` on; ended ones stay until passed over or compacted away. */
  private entries: DeadlineEntry[] = [];
  private head = 0;
  private live = 0;
  private timer: { readonly at: number; readonly clear: () => void } | undefined;
  private idleCheck = false;
  private readonly startTimer: (ms: number, fire: () => void) => () => void;

  constructor(private readonly clock: Clock) {
    this.startTimer = timerOf(clock);
  }

  /** Calls `expire` at `at` (milliseconds since the epoch), unless `end` is called first. */
  start(at: number, expire: () => void): DeadlineEntry {
    const entry: DeadlineEntry = { at, expire };
    const last = this.entries[this.entries.length - 1];
    if (last === undefined || last.at <= at) this.entries.push(entry);
    else this.entries.splice(this.indexAfter(at), 0, entry);
    this.live++;
    if (this.timer === undefined || at < this.timer.at) this.arm(at);
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
    const armed = { at, clear: () => undefined as void };
    this.timer = armed;
    // A timer cleared as it fired, or replaced meanwhile, is passed over.
    armed.clear = this.startTimer(at - this.clock.now(), () => {
      if (this.timer === armed) this.fire(at);
    });
  }

  /** Clears the timer at the next turn of the event loop, if no job started meanwhile. */
  private disarmIfIdle(): void {
    if (this.idleCheck) return;
    this.idleCheck = true;
    this.startTimer(0, () => {
      this.idleCheck = false;
      if (this.live === 0) this.disarm();
    });
  }

  private disarm(): void {
    this.timer?.clear();
    this.timer = undefined;
  }

  /** The timer for `at` fired: every job due by then expires, and the timer moves to the next deadline. */
  private fire(at: number): void {
    this.timer = undefined;
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

  /** Moves the timer to the earliest deadline left, the one at `head`, if it is not already set for it. */
  private armForNext(): void {
    const next = this.entries[this.head]; // live: `fire` passed over every ended entry before it
    if (next === undefined) {
      this.entries = [];
      this.head = 0;
    } else if (this.timer === undefined || next.at < this.timer.at) {
      this.arm(next.at);
    }
  }
}

