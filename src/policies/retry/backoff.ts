import type { Random } from "../../util/clock.js";
import { TimeBuckets } from "./time-buckets.js";

/**
 * Capped exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff and
 * Jitter"): a uniform wait in [0, min(cap, base * 2^(retry-1))).
 *
 * @param retry 1 for the first retry.
 */
export function fullJitterBackoff(retry: number, baseMs: number, capMs: number, random: Random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

/** Retry-After waits begun this close together are one herd, told to come back at the same moment. */
const HERD_MS = 50;
/** Other jobs in the herd at which the spread is whole. */
const FULL_HERD = 16;

/**
 * The waits that honour `Retry-After`: never earlier than asked, plus an upward spread so that the
 * jobs told the same moment do not all come back at once. The spread grows with the herd, to the
 * whole `spreadMs` once `FULL_HERD` other jobs began a wait in the last `HERD_MS`: a job whose 429
 * came alone (scattered 429s) waits just what it was told, and loses no time to the spread.
 */
export class RetryAfterWaits {
  private readonly begun = new TimeBuckets(10, HERD_MS);

  constructor(
    private readonly spreadMs: number,
    private readonly random: Random,
  ) {}

  /** The wait for a `Retry-After` of `retryAfterMs`, begun at `now`. */
  waitMs(now: number, retryAfterMs: number): number {
    this.begun.add(now);
    const others = this.begun.sum(now, HERD_MS) - 1;
    return retryAfterMs + Math.floor(this.random() * this.spreadMs * Math.min(1, others / FULL_HERD));
  }
}
