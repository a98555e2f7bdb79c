/** A count over a sliding time window, kept in one-second buckets (so O(window) memory, not O(events)). */
export class WindowCounter {
  private readonly buckets: number[];
  private lastSecond: number | undefined;

  /** @param windowMs the window, in milliseconds, rounded up to whole seconds. */
  constructor(windowMs: number) {
    this.buckets = new Array<number>(Math.max(1, Math.ceil(windowMs / 1000))).fill(0);
  }

  /** Adds `count` at `now` (milliseconds since the epoch). */
  add(now: number, count = 1): void {
    this.buckets[this.advance(now)]! += count;
  }

  /** The count over the window that ends at `now`. */
  total(now: number): number {
    return this.totalAt(now, now);
  }

  /**
   * The count over the window that will end at `later` (at or after `now`), of what was added until
   * `now`: what has left the window by then no longer counts.
   */
  totalAt(now: number, later: number): number {
    this.advance(now);
    const last = this.lastSecond!;
    const size = this.buckets.length;
    const from = Math.max(0, last - size + 1, Math.floor(later / 1000) - size + 1);
    let total = 0;
    for (let second = from; second <= last; second++) total += this.buckets[second % size]!;
    return total;
  }

  /** The window's length, in whole seconds. */
  get seconds(): number {
    return this.buckets.length;
  }

  reset(): void {
    this.buckets.fill(0);
  }

  /** Clears the buckets of the seconds that passed since the last call; returns `now`'s bucket. */
  private advance(now: number): number {
    const second = Math.floor(now / 1000);
    const size = this.buckets.length;
    const last = this.lastSecond ?? second;
    const passed = Math.min(size, second - last);
    for (let i = 1; i <= passed; i++) this.buckets[(last + i) % size] = 0;
    if (this.lastSecond === undefined || second > last) this.lastSecond = second;
    return second % size;
  }
}
