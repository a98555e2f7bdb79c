import { type Clock, timerOf } from "../util/clock.js";
import { onAbort } from "../util/signals.js";
import type { RenderError } from "./errors.js";

/**
 * Refuses every job unsent from now on (the client halted, the spend cap reached), or says
 * undefined; `attempts` are the job's sends so far, for the error.
 */
export type JobRefusal = (attempts: number) => RenderError | undefined;

/**
 * The one rule for a job's waits, in every policy (a Retry-After, a backoff, the retry budget, an
 * open breaker, a send slot): when a state arises that may refuse jobs, `askAgain` wakes every
 * waiting job; one that `refusal` refuses ends at once, unsent, and any other waits out the rest
 * of its wait, never less. The client makes one and hands it to its policies; a policy made alone
 * makes its own, which nothing refuses.
 */
export class Rechecks {
  /** Grows on every `askAgain`: a job parked in a queue can tell it was asked again, not let through. */
  asked = 0;
  // The early wake of each job asleep in `sleep`.
  private readonly sleepers = new Set<() => void>();
  private readonly listeners: (() => void)[] = [];
  private readonly startTimer: ReturnType<typeof timerOf>;

  constructor(
    private readonly clock: Clock,
    /** The check a woken job asks, and a policy before any wait. */
    readonly refusal: JobRefusal = () => undefined,
  ) {
    this.startTimer = timerOf(clock);
  }

  /** Wakes every waiting job to ask again: a state arose that may refuse it. */
  askAgain(): void {
    this.asked++;
    for (const listener of this.listeners) listener();
    for (const wake of [...this.sleepers]) wake();
  }

  /** Calls `wake` on every `askAgain`: for a policy's own queue, whose jobs are not asleep here. */
  onAskAgain(wake: () => void): void {
    this.listeners.push(wake);
  }

  /**
   * Sleeps `ms`, or less if `askAgain` comes first, and says whether it did; rejects on the job's
   * abort. A timer and the signal's shared listener, not an AbortController a sleep: jobs sleep per
   * send, and a controller with its listener costs more than the rest of a render's work.
   */
  sleep(ms: number, signal: AbortSignal): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const stopListening = onAbort(signal, () => {
        stopTimer();
        this.sleepers.delete(wake);
        reject(signal.reason);
      });
      const end = (early: boolean) => {
        stopListening();
        this.sleepers.delete(wake);
        resolve(early);
      };
      // The timer may fire before startTimer returns (a wait already up): `fired` does not need it.
      const fired = () => end(false);
      const wake = () => {
        stopTimer();
        end(true);
      };
      this.sleepers.add(wake);
      const stopTimer = this.startTimer(ms, fired);
    });
  }

  /**
   * Waits `ms` in full unless the job is refused when asked again: then it throws the refusal at
   * once. The caller asks `refusal` before it begins the wait.
   */
  async waitOut(ms: number, signal: AbortSignal, attempts: number): Promise<void> {
    const end = this.clock.now() + ms;
    while (await this.sleep(end - this.clock.now(), signal)) {
      const refused = this.refusal(attempts);
      if (refused) throw refused;
    }
  }
}
