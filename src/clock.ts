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
      const wait = (left: number) => {
        timer = setTimeout(
          () => {
            if (left > MAX_TIMER_MS) {
              wait(left - MAX_TIMER_MS);
              return;
            }
            signal.removeEventListener("abort", onAbort);
            resolve();
          },
          Math.min(Math.max(0, left), MAX_TIMER_MS),
        );
      };
      signal.addEventListener("abort", onAbort, { once: true });
      wait(ms);
    });
  },
};

/** A number in [0, 1). */
export type Random = () => number;

export const systemRandom: Random = () => Math.random();
