/**
 * The send rate a limiter learns from `rate_limited`. Unlimited until the first 429. A 429 says the
 * service's bucket was empty when that send arrived, so while 429s come, the service accepts exactly
 * its limit: the rate drops to the goodput measured since the last cut (sends accepted per second),
 * a little below. Each cut is measured for 50 ms before the next; with too little to measure, a 429
 * halves the rate. Only a 429 to a send made after the last cut counts: older sends are old news.
 * Without 429s the rate climbs, gently at first (1 % each 100 ms by default), faster the longer none
 * came. Sends draw tokens from a bucket that holds 20 ms worth, so they go out evenly, not in bursts.
 */
export interface SendRateSettings {
  /** Share of the measured goodput the rate drops to. */
  readonly decrease: number;
  /** Share the rate grows by each 100 ms without a 429. */
  readonly increase: number;
  /** Lowest rate, in sends per second. */
  readonly minRate: number;
}

/** The goodput window, and the least of it that is worth measuring (time, accepted sends). */
const WINDOW_MS = 250;
const MIN_SPAN_MS = 50;
const MIN_ACCEPTED = 3;
const RAISE_EVERY_MS = 100;

export class SendRate {
  /** Sends per second; Infinity until the service first says `rate_limited`. */
  rate = Number.POSITIVE_INFINITY;
  private tokens = 0;
  private tokensAt = 0;
  private lastCutAt = Number.NEGATIVE_INFINITY;
  private lastRaiseAt = 0;
  private firstSentAt: number | undefined;
  /** Send times of recent sends, and of recent accepted sends, oldest first. */
  private readonly sent = new TimeWindow();
  private readonly accepted = new TimeWindow();

  constructor(private readonly settings: SendRateSettings) {}

  /** Takes a token: 0 when a send may go now (and it is counted as sent), else the ms until one may. */
  take(now: number): number {
    if (this.rate !== Number.POSITIVE_INFINITY) {
      this.refill(now);
      if (this.tokens < 1) return Math.ceil(((1 - this.tokens) * 1000) / this.rate);
      this.tokens -= 1;
    }
    this.firstSentAt ??= now;
    this.sent.add(now);
    return 0;
  }

  /** The service accepted the send made at `sentAt` (it rendered, or failed on its own merits). */
  accept(now: number, sentAt: number): void {
    this.accepted.add(sentAt);
    if (this.rate === Number.POSITIVE_INFINITY) return;
    if (now - Math.max(this.lastCutAt, this.lastRaiseAt) >= RAISE_EVERY_MS) {
      this.refill(now);
      // The longer no 429 came, the further below the limit the rate likely is: climb faster.
      const calmSeconds = Math.floor((now - this.lastCutAt) / 1000);
      this.rate *= 1 + this.settings.increase * (1 + calmSeconds);
      this.lastRaiseAt = now;
    }
  }

  /** The send made at `sentAt` got `rate_limited`. True when this cut the rate. */
  cut(now: number, sentAt: number): boolean {
    if (sentAt < this.lastCutAt) return false; // sent before the last cut took hold
    const limited = this.rate !== Number.POSITIVE_INFINITY;
    if (limited && now - this.lastCutAt < MIN_SPAN_MS) return false; // still measuring the last cut
    const from = Math.max(this.lastCutAt, now - WINDOW_MS);
    const span = now - from;
    const accepted = this.accepted.countSince(from, now - WINDOW_MS);
    let next: number;
    if (limited && accepted >= MIN_ACCEPTED) {
      next = ((accepted * 1000) / span) * this.settings.decrease;
    } else {
      // Too little to measure: halve the rate sent at.
      const sentSince = Math.max(this.firstSentAt ?? now, now - WINDOW_MS);
      const sendRate = (this.sent.countSince(sentSince, now - WINDOW_MS) * 1000) / Math.max(1, now - sentSince);
      next = Math.min(this.rate, sendRate) / 2;
    }
    this.rate = Math.max(this.settings.minRate, next);
    this.tokens = 0;
    this.tokensAt = now;
    this.lastCutAt = now;
    return true;
  }

  private refill(now: number): void {
    const capacity = Math.max(1, this.rate / 50); // 20 ms worth of sends
    this.tokens = Math.min(capacity, this.tokens + ((now - this.tokensAt) * this.rate) / 1000);
    this.tokensAt = now;
  }
}

/**
 * Times over the last `WINDOW_MS`, oldest first (nearly: responses finish out of order, and a count
 * off by one in a window of hundreds does not matter). Memory stays bounded by the window.
 */
class TimeWindow {
  private readonly times: number[] = [];
  private head = 0;

  add(time: number): void {
    this.times.push(time);
    this.drop(time - WINDOW_MS);
  }

  /** Times at or after `from`, once those before `horizon` are dropped. */
  countSince(from: number, horizon: number): number {
    this.drop(horizon);
    let count = 0;
    for (let i = this.times.length - 1; i >= this.head && this.times[i]! >= from; i--) count++;
    return count;
  }

  private drop(horizon: number): void {
    while (this.head < this.times.length && this.times[this.head]! < horizon) this.head++;
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times.splice(0, this.head);
      this.head = 0;
    }
  }
}
