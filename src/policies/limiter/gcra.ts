/**
 * GCRA pacing (the generic cell rate algorithm, as redis-cell and Stripe's rate limiters use): one
 * number, the theoretical arrival time of the next send, moved on by one interval a send. Sends go
 * out evenly, at most `BURST_MS` worth at once. The Redis store runs the same steps in Lua.
 */

/** The most sends let go at once, in milliseconds' worth at the rate (one at least). */
export const BURST_MS = 20;

/**
 * Takes one send at `rate` (sends per second; Infinity lets everything go) from the pace whose
 * theoretical arrival time is `tat`: `{ wait: 0, tat }` with the moved-on time, or the ms to wait.
 */
export function gcraTake(tat: number, now: number, rate: number): { readonly wait: number; readonly tat: number } {
  if (!Number.isFinite(rate)) return { wait: 0, tat: now };
  const interval = 1000 / rate;
  const tolerance = Math.max(0, BURST_MS - interval);
  const start = Math.max(tat, now);
  if (start - now > tolerance) return { wait: Math.ceil(start - tolerance - now), tat };
  return { wait: 0, tat: start + interval };
}
