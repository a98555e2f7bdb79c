/**
 * Upper bounds, in milliseconds, of the buckets every duration is counted in: `stats()`, the
 * Prometheus text and the OpenTelemetry histograms use the same ones, so the three agree. From a
 * loopback send (5 ms) to a job's default deadline (600 s).
 */
export const DURATION_BUCKETS_MS: readonly number[] = Object.freeze([
  5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000,
]);

/** How long something took, over every time it happened. */
export interface DurationSummary {
  readonly count: number;
  /** The sum of all durations, in milliseconds. */
  readonly totalMs: number;
  /** The longest; undefined before the first. */
  readonly maxMs: number | undefined;
  /**
   * The median and the 95th and 99th percentiles, in milliseconds, estimated from the buckets as
   * Prometheus' `histogram_quantile` does (never above `maxMs`); undefined before the first.
   */
  readonly p50Ms: number | undefined;
  readonly p95Ms: number | undefined;
  readonly p99Ms: number | undefined;
  /**
   * How many took at most `leMs`, for each bound of `DURATION_BUCKETS_MS` and then `Infinity`:
   * cumulative, as Prometheus' `le` buckets.
   */
  readonly buckets: readonly { readonly leMs: number; readonly count: number }[];
}

/** Counts durations into `DURATION_BUCKETS_MS`. */
export class Durations {
  private count = 0;
  private totalMs = 0;
  private maxMs: number | undefined;
  /** Not cumulative: `counts[i]` holds durations in (bound i-1, bound i]; the last, above every bound. */
  private readonly counts = new Array<number>(DURATION_BUCKETS_MS.length + 1).fill(0);

  record(ms: number): void {
    this.count++;
    this.totalMs += ms;
    if (this.maxMs === undefined || ms > this.maxMs) this.maxMs = ms;
    let bucket = 0;
    while (bucket < DURATION_BUCKETS_MS.length && ms > (DURATION_BUCKETS_MS[bucket] as number)) bucket++;
    this.counts[bucket] = (this.counts[bucket] as number) + 1;
  }

  summary(): DurationSummary {
    let cumulative = 0;
    const buckets = this.counts.map((count, index) => {
      cumulative += count;
      return Object.freeze({ leMs: DURATION_BUCKETS_MS[index] ?? Number.POSITIVE_INFINITY, count: cumulative });
    });
    return {
      count: this.count,
      totalMs: this.totalMs,
      maxMs: this.maxMs,
      p50Ms: this.quantile(buckets, 0.5),
      p95Ms: this.quantile(buckets, 0.95),
      p99Ms: this.quantile(buckets, 0.99),
      buckets,
    };
  }

  /** Linear within the bucket the rank falls in, as `histogram_quantile`; the last bucket ends at the max. */
  private quantile(buckets: readonly { leMs: number; count: number }[], q: number): number | undefined {
    if (this.maxMs === undefined) return undefined;
    const rank = q * this.count;
    const index = buckets.findIndex((bucket) => bucket.count >= rank);
    const bucket = buckets[index] as { leMs: number; count: number };
    const below = index === 0 ? 0 : (buckets[index - 1] as { count: number }).count;
    const lower = index === 0 ? 0 : (DURATION_BUCKETS_MS[index - 1] as number);
    const upper = Math.min(bucket.leMs, this.maxMs);
    const inBucket = bucket.count - below;
    const estimate = inBucket === 0 ? upper : lower + ((upper - lower) * (rank - below)) / inBucket;
    return Math.min(Math.max(estimate, 0), this.maxMs);
  }
}
