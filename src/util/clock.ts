/**
 * The only file that reads Date.now or Math.random (STYLE §5.5), and sets the timers of every wait:
 * whatever decides takes time and jitter from a `Clock` and a `Random`, which tests replace. Only
 * timers that decide nothing run on their own (the Redis store's lease renewal, the CLI's display).
 */
import { onAbort } from "./signals.js";

/** Time as the library sees it. Tests pass a fake one. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`; rejects with `signal.reason` on abort; clears its timer either way. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  /**
   * Calls `fire` after `ms` unless the returned function is called first: a wait with no signal
   * and no promise, for what is set and cleared once a job. It may call `fire` before it returns
   * when `ms` is up already. Optional: without it, a wait is made of `sleep` (see `timerOf`).
   */
  startTimer?(ms: number, fire: () => void): () => void;
}

/** The longest delay one `setTimeout` can hold; a longer one fires at once (Node clamps it to 1 ms). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Calls `fire` once `ms` have passed by `Date.now()`, unless the returned function is called first.
 * One timer and no signal: after an idle spell, adding a listener to an AbortSignal took 70 µs here,
 * on top of the timer's 20 µs, and a client sending one job at a time would pay it every job.
 */
export function startTimer(ms: number, fire: () => void): () => void {
  // A timer counts from the event loop's cached time, which can lag Date.now by a millisecond or
  // more: it may fire before `ms` have passed by the clock that timed a Retry-After. It is set
  // again for what is left, so a wait never ends early.
  const span = ms > 0 ? ms : 0; // NaN waits no time, as a negative wait does
  const end = Date.now() + span;
  const wait = () => {
    const left = end - Date.now();
    if (left <= 0) fire();
    else timer = setTimeout(wait, Math.min(left, MAX_TIMER_MS));
  };
  let timer = setTimeout(wait, Math.min(span, MAX_TIMER_MS));
  return () => clearTimeout(timer);
}

/** The real clock: `Date.now()` and timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms, signal) {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const stop = startTimer(ms, () => {
        stopListening();
        resolve();
      });
      const stopListening = onAbort(signal, () => {
        stop();
        reject(signal.reason);
      });
    });
  },
  startTimer,
};

/** The reason a wait made of `sleep` is cleared with: a default one builds a DOMException each time. */
const CLEARED = Symbol("timer cleared");

/**
 * `clock.startTimer`, or, for a clock without one, a wait made of its `sleep` and an AbortController.
 * A clock made by spreading `systemClock` with a `sleep` of its own (a test's) keeps the system's
 * `startTimer`, which would wait in real time: its waits are made of its `sleep` too.
 */
export function timerOf(clock: Clock): (ms: number, fire: () => void) => () => void {
  const own = clock.startTimer !== systemClock.startTimer || clock.sleep === systemClock.sleep;
  if (clock.startTimer && own) return clock.startTimer.bind(clock);
  return (ms, fire) => {
    const cancel = new AbortController();
    clock.sleep(ms, cancel.signal).then(fire, () => undefined); // rejected: cleared first
    return () => cancel.abort(CLEARED);
  };
}

/** A number in [0, 1). */
export type Random = () => number;

export const systemRandom: Random = () => Math.random();
