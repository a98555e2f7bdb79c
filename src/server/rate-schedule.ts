/**
 * A rate limit whose sustained rate changes over time: the pure arithmetic behind `TokenBucket`,
 * exported so a benchmark can compute the best wall time any client could reach.
 */

/** A change of a rate limit's sustained rate, in force from `fromMs` until the next step. */
export interface RateStep {
  /** When the step takes effect, in milliseconds after server start. */
  readonly fromMs: number;
  /** Tokens added per second from `fromMs` on. */
  readonly ratePerSecond: number;
}

/** A token bucket's settings. */
export interface RateLimitConfig {
  /** Tokens added per second: the sustained request rate (until the first of `steps`). */
  readonly ratePerSecond: number;
  /** Bucket size: how many requests may arrive at once after a quiet spell. */
  readonly burst: number;
  /**
   * Later rates, each in force from its `fromMs` (ms after server start) until the next step.
   * Listed in increasing `fromMs`; the burst stays the same throughout.
   *
   * @default []
   */
  readonly steps?: readonly RateStep[];
}

/** One stretch of constant rate: `[fromMs, toMs)`. */
export interface RateSegment {
  readonly fromMs: number;
  readonly toMs: number;
  /** Tokens added per second. */
  readonly ratePerSecond: number;
}

/**
 * The schedule as constant-rate stretches covering `[0, Infinity)`. Steps are sorted first (a stable
 * sort: of two steps at one time the later one listed wins); a step at or before 0 replaces the base rate.
 */
export function rateSegments(config: RateLimitConfig): readonly RateSegment[] {
  const steps = [...(config.steps ?? [])].sort((a, b) => a.fromMs - b.fromMs);
  const points = [{ fromMs: 0, ratePerSecond: config.ratePerSecond }, ...steps];
  const segments: RateSegment[] = [];
  points.forEach((p, i) => {
    const fromMs = Math.max(0, p.fromMs);
    const toMs = Math.max(fromMs, points[i + 1]?.fromMs ?? Infinity);
    if (toMs > fromMs || i === points.length - 1) segments.push({ fromMs, toMs, ratePerSecond: p.ratePerSecond });
  });
  return segments;
}

/** The rate in force at `elapsedMs` after server start, in tokens per second. */
export function rateAt(config: RateLimitConfig, elapsedMs: number): number {
  const segment = rateSegments(config).findLast((s) => elapsedMs >= s.fromMs);
  return segment ? segment.ratePerSecond : config.ratePerSecond;
}

/** Tokens the schedule adds from `fromMs` to `toMs` (both ms after server start): the rate's integral. */
export function tokensBetween(segments: readonly RateSegment[], fromMs: number, toMs: number): number {
  let tokens = 0;
  for (const s of segments) {
    const overlap = Math.min(toMs, s.toMs) - Math.max(fromMs, s.fromMs);
    if (overlap > 0) tokens += (overlap * s.ratePerSecond) / 1000;
  }
  return tokens;
}

/** Milliseconds from `fromMs` (after server start) until the schedule has added `tokens` more. */
export function msUntilTokens(segments: readonly RateSegment[], fromMs: number, tokens: number): number {
  let needed = tokens;
  for (const s of segments) {
    if (s.toMs <= fromMs || needed <= 0) continue;
    const start = Math.max(fromMs, s.fromMs);
    const available = ((s.toMs - start) * s.ratePerSecond) / 1000; // Infinity for the last stretch
    if (available >= needed) return start - fromMs + (needed * 1000) / s.ratePerSecond;
    needed -= available;
  }
  return needed <= 0 ? 0 : Infinity;
}

// Float sums of rates and times must not lose a request that is due exactly at a step boundary.
const EPSILON = 1e-9;

/**
 * How many requests the limit lets through by `elapsedMs` after server start, for the best possible
 * client: the full bucket at start plus every token added since. A client that always has a request
 * waiting never lets the bucket fill, so no token is lost to the cap: no client can do better.
 */
export function requestsAllowedBy(config: RateLimitConfig, elapsedMs: number): number {
  return Math.floor(config.burst + tokensBetween(rateSegments(config), 0, Math.max(0, elapsedMs)) + EPSILON);
}

/**
 * The earliest time, in milliseconds after server start, by which the limit allows `count` requests:
 * the ideal wall time of `count` jobs of one request each (the inverse of `requestsAllowedBy`).
 */
export function msToAllow(config: RateLimitConfig, count: number): number {
  if (count <= config.burst) return 0;
  return msUntilTokens(rateSegments(config), 0, count - config.burst);
}
