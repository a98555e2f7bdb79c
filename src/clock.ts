/** The only file that calls Date.now, setTimeout or Math.random (STYLE §5.5). */

/** Time as the library sees it. Tests pass a fake one. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`; rejects with `signal.reason` on abort; clears its timer either way. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

/** The longest delay one `setTimeout` can hold; a longer one fires at once (Node clamps it to 1 ms). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms, signal) {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      let timer: NodeJS.Timeout | undefined;
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      // A timer counts from the event loop's cached time, which can lag Date.now by a millisecond
      // or more: it may fire before `ms` have passed by the clock that timed a Retry-After. It is
      // set again for what is left, so a wait never ends early.
      const span = ms > 0 ? ms : 0; // NaN waits no time, as a negative wait does
      const end = Date.now() + span;
      const wait = () => {
        const left = end - Date.now();
        if (left <= 0) {
          signal.removeEventListener("abort", onAbort);
          resolve();
          return;
        }
        timer = setTimeout(wait, Math.min(left, MAX_TIMER_MS));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      timer = setTimeout(wait, Math.min(span, MAX_TIMER_MS));
    });
  },
};

/**
 * Calls `fire` after `ms` unless the returned function is called first: one timer and no signal,
 * for a hot path where `sleep`'s AbortController would cost more than the rest of the work.
 */
export function startTimer(ms: number, fire: () => void): () => void {
  const timer = setTimeout(fire, Math.min(ms, MAX_TIMER_MS));
  return () => clearTimeout(timer);
}

/** A number in [0, 1). */
export type Random = () => number;

export const systemRandom: Random = () => Math.random();
