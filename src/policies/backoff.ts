import type { Random } from "../clock.js";

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

/**
 * The wait that honours a `Retry-After`: never earlier than asked, plus an upward spread of up to
 * `spreadMs` so that the clients told the same instant do not all come back at once.
 */
export function retryAfterWait(retryAfterMs: number, spreadMs: number, random: Random): number {
  return retryAfterMs + Math.floor(random() * spreadMs);
}
