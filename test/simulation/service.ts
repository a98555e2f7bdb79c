import { type RateLimitConfig, TokenBucket } from "../../src/server/limits.js";
import { rateSegments, tokensBetween } from "../../src/server/rate-schedule.js";
import { type Random, uniform } from "./prng.js";

/** What the simulated service does, besides rendering. */
export interface ServiceSettings {
  /** Its rate limit, the reference server's token bucket; none if undefined. */
  readonly limit: RateLimitConfig | undefined;
  /** Share of sends answered `rate_limited` whatever the rate (scattered 429s). */
  readonly p429: number;
  /** Share of sends answered `internal_error`. */
  readonly p500: number;
  /**
   * Every job's first send answered `rate_limited` (Retry-After 1 s) whatever the rate, and its
   * resends judged as usual: a service that says "come back later" to each new job (the reference
   * server's `firstSendOnly` fault).
   */
  readonly firstSends?: boolean;
  /** Milliseconds from a send to its answer, drawn uniformly per send. */
  readonly latency: { readonly min: number; readonly max: number };
}

/** How a send was answered: the limit's own 429s told apart from scattered ones. */
export type AnswerKind = "accepted" | "limit_429" | "scattered_429" | "internal_error";

export interface Answer {
  readonly kind: AnswerKind;
  /** Its `Retry-After`, in milliseconds; undefined when it has none. */
  readonly retryAfterMs: number | undefined;
  /** When the answer reaches the client, in milliseconds. */
  readonly answeredAt: number;
}

/** `Retry-After` of a scattered 429, as the reference server's `rate_limited` fault. */
const SCATTERED_RETRY_AFTER_MS = 1000;

/**
 * The rendering service as the reference server judges a send (src/server/handler.ts): a scattered
 * 500, then a scattered 429 (neither takes a token), then the rate limit, whose 429 says when a
 * token is due in whole seconds, rounded up (`formatRetryAfter`'s default), then a render.
 */
export class SimService {
  /** Sends that took a token. */
  accepted = 0;
  /** The most that `accepted` ever ran over the burst plus the rate's integral: 0 or less. */
  maxExcess = -Infinity;
  private readonly bucket: TokenBucket | undefined;
  private readonly segments: ReturnType<typeof rateSegments> | undefined;

  constructor(
    private readonly settings: ServiceSettings,
    private readonly startedAt: number,
    private readonly random: Random,
  ) {
    this.bucket = settings.limit && new TokenBucket(settings.limit, startedAt);
    this.segments = settings.limit && rateSegments(settings.limit);
  }

  /** Answers a send that arrives at `now`, a job's resend or its first send. */
  send(now: number, resend: boolean): Answer {
    const { p429, p500, latency, firstSends = false } = this.settings;
    const answeredAt = now + uniform(this.random, latency.min, latency.max);
    if (this.random() < p500) return { kind: "internal_error", retryAfterMs: undefined, answeredAt };
    if (firstSends && !resend) return { kind: "scattered_429", retryAfterMs: SCATTERED_RETRY_AFTER_MS, answeredAt };
    if (this.random() < p429) return { kind: "scattered_429", retryAfterMs: SCATTERED_RETRY_AFTER_MS, answeredAt };
    const wait = this.bucket?.take(now) ?? 0;
    if (wait > 0) return { kind: "limit_429", retryAfterMs: Math.ceil(wait / 1000) * 1000, answeredAt };
    this.accepted++;
    if (this.settings.limit && this.segments) {
      const allowed = this.settings.limit.burst + tokensBetween(this.segments, 0, now - this.startedAt);
      this.maxExcess = Math.max(this.maxExcess, this.accepted - allowed);
    }
    return { kind: "accepted", retryAfterMs: undefined, answeredAt };
  }
}
