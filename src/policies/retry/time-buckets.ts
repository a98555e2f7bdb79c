/**
 * Counts over recent time in fixed buckets, so memory stays bounded whatever the rate: the last
 * `historyMs` of counts, `bucketMs` apart. Time only moves forward; a count at an older time is
 * added to the newest bucket it still fits.
 */
export class TimeBuckets {
  private readonly counts: Float64Array;
  private readonly epochs: Float64Array;

  constructor(
    private readonly bucketMs: number,
    historyMs: number,
  ) {
    const size = Math.ceil(historyMs / bucketMs);
    this.counts = new Float64Array(size);
    this.epochs = new Float64Array(size).fill(-1);
  }

  add(now: number, count = 1): void {
    const epoch = Math.floor(now / this.bucketMs);
    const i = epoch % this.counts.length;
    if (this.epochs[i] !== epoch) {
      this.epochs[i] = epoch;
      this.counts[i] = 0;
    }
    this.counts[i]! += count;
  }

  /** The count over at least the `spanMs` that end at `now` (from the start of the bucket that holds `now - spanMs`). */
  sum(now: number, spanMs: number): number {
    let total = 0;
    for (let epoch = this.firstEpoch(now, spanMs); epoch <= Math.floor(now / this.bucketMs); epoch++) {
      total += this.at(epoch);
    }
    return total;
  }

  /**
   * The count per second over the last `spanMs`, or only since `since` when that is later (counts
   * before it belong to something else), by the time the buckets read actually cover.
   */
  perSecond(now: number, spanMs: number, since = Number.NEGATIVE_INFINITY): number {
    const span = Math.min(spanMs, now - since);
    const covered = now - Math.max(since, this.firstEpoch(now, span) * this.bucketMs);
    return (this.sum(now, span) * 1000) / Math.max(covered, 1);
  }

  /** The largest count over any `spanMs` within the history that ends at `now`. */
  maxSum(now: number, spanMs: number): number {
    const last = Math.floor(now / this.bucketMs);
    const width = Math.max(1, Math.round(spanMs / this.bucketMs));
    const first = last - this.counts.length + 1;
    let window = 0;
    let best = 0;
    for (let epoch = first; epoch <= last; epoch++) {
      window += this.at(epoch) - (epoch - width >= first ? this.at(epoch - width) : 0);
      best = Math.max(best, window);
    }
    return best;
  }

  reset(): void {
    this.epochs.fill(-1);
  }

  private firstEpoch(now: number, spanMs: number): number {
    const span = Math.min(spanMs, (this.counts.length - 1) * this.bucketMs);
    return Math.floor((now - span) / this.bucketMs);
  }

  private at(epoch: number): number {
    const i = ((epoch % this.counts.length) + this.counts.length) % this.counts.length;
    return this.epochs[i] === epoch ? this.counts[i]! : 0;
  }
}
