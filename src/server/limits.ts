/** A token bucket's settings. */
export interface RateLimitConfig {
  /** Tokens added per second: the sustained request rate. */
  readonly ratePerSecond: number;
  /** Bucket size: how many requests may arrive at once after a quiet spell. */
  readonly burst: number;
}

/** A render quota that refills at fixed periods counted from server start. */
export interface QuotaConfig {
  /** Billed renders allowed per period. */
  readonly renders: number;
  /** Length of a period, in milliseconds. */
  readonly periodMs: number;
}

/** Token bucket on an injected clock. Every request that reaches it takes one token. */
export class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(
    private readonly config: RateLimitConfig,
    now: number,
  ) {
    this.tokens = config.burst;
    this.updatedAt = now;
  }

  /** Takes a token and returns 0, or returns the wait in ms until one is due (taking nothing). */
  take(now: number): number {
    const elapsed = Math.max(0, now - this.updatedAt);
    this.tokens = Math.min(this.config.burst, this.tokens + (elapsed * this.config.ratePerSecond) / 1000);
    this.updatedAt = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return ((1 - this.tokens) * 1000) / this.config.ratePerSecond;
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
