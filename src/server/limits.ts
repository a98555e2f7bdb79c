import { msUntilTokens, type RateLimitConfig, rateSegments, tokensBetween } from "./rate-schedule.js";

export type { RateLimitConfig, RateStep } from "./rate-schedule.js";

/** A render quota that refills at fixed periods counted from server start. */
export interface QuotaConfig {
  /** Billed renders allowed per period. */
  readonly renders: number;
  /** Length of a period, in milliseconds. */
  readonly periodMs: number;
}

/**
 * Token bucket on an injected clock. Every request that reaches it takes one token. It starts full
 * at `startedAt`, the time zero of `config.steps`, and refills at the rate in force at each moment:
 * across a step the refill is the rate's integral, not the newer rate times the whole gap.
 */
export class TokenBucket {
  private tokens: number;
  /** Last refill, in milliseconds after `startedAt`. */
  private updatedAt = 0;
  private readonly segments: ReturnType<typeof rateSegments>;

  constructor(
    private readonly config: RateLimitConfig,
    private readonly startedAt: number,
  ) {
    this.tokens = config.burst;
    this.segments = rateSegments(config);
  }

  /** Takes a token and returns 0, or returns the wait in ms until one is due (taking nothing). */
  take(now: number): number {
    const elapsed = Math.max(this.updatedAt, now - this.startedAt);
    const added = tokensBetween(this.segments, this.updatedAt, elapsed);
    this.tokens = Math.min(this.config.burst, this.tokens + added);
    this.updatedAt = elapsed;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return msUntilTokens(this.segments, elapsed, 1 - this.tokens);
  }
}

/**
 * Renders left in the current period. A render reserves a unit when the engine starts, so
 * concurrent renders cannot overshoot; a render that ends unbilled (`render_timeout`) gives it back.
 * So the count falls only by billed renders: successes, `render_failed`, resets after a render.
 */
export class Quota {
  private period = 0;
  private used = 0;

  constructor(
    private readonly config: QuotaConfig,
    private readonly startedAt: number,
  ) {}

  /** Renders left in the period that holds `now`. */
  remaining(now: number): number {
    this.roll(now);
    return Math.max(0, this.config.renders - this.used);
  }

  /** Milliseconds from `now` until the next period starts (and the quota refills). */
  msUntilRefill(now: number): number {
    this.roll(now);
    return this.startedAt + (this.period + 1) * this.config.periodMs - now;
  }

  /** Reserves one render; false when none is left. */
  reserve(now: number): boolean {
    if (this.remaining(now) === 0) return false;
    this.used += 1;
    return true;
  }

  /** Returns a reserved render that was not billed. */
  release(): void {
    this.used = Math.max(0, this.used - 1);
  }

  private roll(now: number): void {
    const period = Math.max(0, Math.floor((now - this.startedAt) / this.config.periodMs));
    if (period !== this.period) {
      this.period = period;
      this.used = 0;
    }
  }
}
