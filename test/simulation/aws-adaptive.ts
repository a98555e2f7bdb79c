/**
 * The AWS SDK v3 adaptive rate limiter, ported with the simulation's clock in place of `Date.now()`.
 *
 * Source: smithy-lang/smithy-typescript @ f884df74e42e5b51ec7c482812cee0afd6d9ac79,
 * `packages/util-retry/src/DefaultRateLimiter.ts`. Every line of arithmetic is the original's; the
 * only change is that `getSendToken`'s wait is handed to the caller instead of awaited: the
 * original computes its delay from the capacity at the call and takes the token only after the
 * wait (so callers that ask at once all wait the same delay), which `sendTokenDelay` then
 * `takeSendToken` reproduce.
 *
 * The simulation asks it before every send and tells it of every answer, as the legacy
 * `middleware-retry` strategy did (a `beforeRequest` each attempt); the `RetryStrategyV2` one in
 * `util-retry/src/AdaptiveRetryStrategy.ts` asks only before a request's first send.
 */
export class AwsAdaptiveRateLimiter {
  private readonly beta = 0.7;
  private readonly minCapacity = 1;
  private readonly minFillRate = 0.5;
  private readonly scaleConstant = 0.4;
  private readonly smooth = 0.8;

  private currentCapacity = 0;
  private enabled = false;
  private lastMaxRate = 0;
  private measuredTxRate = 0;
  private requestCount = 0;

  private fillRate: number;
  private lastThrottleTime: number;
  private lastTimestamp = 0;
  private lastTxRateBucket: number;
  private maxCapacity: number;
  private timeWindow = 0;

  /** @param now the time of creation, in milliseconds since the epoch. */
  constructor(now: number) {
    const seconds = now / 1000;
    this.lastThrottleTime = seconds;
    this.lastTxRateBucket = Math.floor(seconds);
    this.fillRate = this.minFillRate;
    this.maxCapacity = this.minCapacity;
  }

  /**
   * The first half of `getSendToken()` at `now` (ms): how many milliseconds to wait before taking a
   * token, or undefined when no token is taken (throttling not enabled yet).
   */
  sendTokenDelay(now: number): number | undefined {
    // Client side throttling is not enabled until we see a throttling error.
    if (!this.enabled) return undefined;
    this.refillTokenBucket(now / 1000);
    return 1 > this.currentCapacity ? ((1 - this.currentCapacity) / this.fillRate) * 1000 : 0;
  }

  /** The second half of `getSendToken()`, after the wait `sendTokenDelay` gave: takes the token. */
  takeSendToken(): void {
    this.currentCapacity -= 1;
  }

  /** Learns from an answer received at `now` (ms); `throttled` for a throttling error (429). */
  updateClientSendingRate(now: number, throttled: boolean): void {
    const seconds = now / 1000;
    let calculatedRate: number;
    this.updateMeasuredRate(seconds);
    if (throttled) {
      const rateToUse = !this.enabled ? this.measuredTxRate : Math.min(this.measuredTxRate, this.fillRate);
      this.lastMaxRate = rateToUse;
      this.calculateTimeWindow();
      this.lastThrottleTime = seconds;
      calculatedRate = this.cubicThrottle(rateToUse);
      this.enabled = true;
    } else {
      this.calculateTimeWindow();
      calculatedRate = this.cubicSuccess(seconds);
    }
    const newRate = Math.min(calculatedRate, 2 * this.measuredTxRate);
    this.updateTokenBucketRate(seconds, newRate);
  }

  private refillTokenBucket(timestamp: number): void {
    if (!this.lastTimestamp) {
      this.lastTimestamp = timestamp;
      return;
    }
    const fillAmount = (timestamp - this.lastTimestamp) * this.fillRate;
    this.currentCapacity = Math.min(this.maxCapacity, this.currentCapacity + fillAmount);
    this.lastTimestamp = timestamp;
  }

  private calculateTimeWindow(): void {
    this.timeWindow = getPrecise(Math.pow((this.lastMaxRate * (1 - this.beta)) / this.scaleConstant, 1 / 3));
  }

  private cubicThrottle(rateToUse: number): number {
    return getPrecise(rateToUse * this.beta);
  }

  private cubicSuccess(timestamp: number): number {
    return getPrecise(this.scaleConstant * Math.pow(timestamp - this.lastThrottleTime - this.timeWindow, 3) + this.lastMaxRate);
  }

  private updateTokenBucketRate(timestamp: number, newRate: number): void {
    // Refill based on our current rate before we update to the new fill rate.
    this.refillTokenBucket(timestamp);
    this.fillRate = Math.max(newRate, this.minFillRate);
    this.maxCapacity = Math.max(newRate, this.minCapacity);
    // When we scale down we can't have a current capacity that exceeds our maxCapacity.
    this.currentCapacity = Math.min(this.currentCapacity, this.maxCapacity);
  }

  private updateMeasuredRate(t: number): void {
    const timeBucket = Math.floor(t * 2) / 2;
    this.requestCount++;
    if (timeBucket > this.lastTxRateBucket) {
      const currentRate = this.requestCount / (timeBucket - this.lastTxRateBucket);
      this.measuredTxRate = getPrecise(currentRate * this.smooth + this.measuredTxRate * (1 - this.smooth));
      this.requestCount = 0;
      this.lastTxRateBucket = timeBucket;
    }
  }
}

const getPrecise = (num: number): number => parseFloat(num.toFixed(8));
