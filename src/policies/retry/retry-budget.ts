import { WindowCounter } from "../../util/window-counter.js";

/**
 * Sends allowed per send the service accepted, retries included, where that is more than the
 * budget's share (Google SRE's client-side throttling, K = 2).
 */
const SENDS_PER_ACCEPTED = 2;

/**
 * A retry budget (as in Finagle and gRPC): retries may add at most `ratio` of recent first sends,
 * plus a small floor, so that jobs failing together never multiply the load on a struggling service.
 * While the service accepts at least half of what is sent (as Google SRE's client-side throttling
 * reads it: not overloaded), retries may go on past that share: a service failing a scattered
 * third of its sends needs half as many retries as first sends, and a budget of 20 % would leave
 * a batch's jobs waiting, or failing, for nothing.
 */
export class RetryBudget {
  private readonly firsts: WindowCounter;
  private readonly retries: WindowCounter;
  private readonly sends: WindowCounter;
  private readonly accepted: WindowCounter;

  /**
   * @param ratio retries allowed per first send.
   * @param minPerSecond retries always allowed per second of the window.
   * @param windowMs the window, in milliseconds (rounded up to whole seconds).
   */
  constructor(
    private readonly ratio: number,
    private readonly minPerSecond: number,
    windowMs: number,
  ) {
    this.firsts = new WindowCounter(windowMs);
    this.retries = new WindowCounter(windowMs);
    this.sends = new WindowCounter(windowMs);
    this.accepted = new WindowCounter(windowMs);
  }

  /** Notes a job's first send. */
  recordFirst(now: number): void {
    this.firsts.add(now);
  }

  /**
   * Notes the answer to a send, first or not: `accepted` unless it asked for a resend (429, 408,
   * a 5xx, a network error), as a service that sheds load does.
   */
  recordAnswer(now: number, accepted: boolean): void {
    this.sends.add(now);
    if (accepted) this.accepted.add(now);
  }

  /** Takes one retry from the budget; false when the budget is spent. */
  tryRetry(now: number): boolean {
    if (!this.fits(now, now)) return false;
    this.retries.add(now);
    return true;
  }

  /**
   * When the budget, spent now, next has room for a retry as the window moves on, if no first send
   * came meanwhile (each one that comes brings that time closer); undefined if it never will.
   */
  nextRoom(now: number): number | undefined {
    const second = Math.floor(now / 1000);
    for (let ahead = 1; ahead <= this.firsts.seconds; ahead++) {
      const later = (second + ahead) * 1000;
      if (this.fits(now, later)) return later;
    }
    return undefined;
  }

  /** Whether one more retry fits the window that ends at `later`, counting what came until `now`. */
  private fits(now: number, later: number): boolean {
    const allowed = this.minPerSecond * this.firsts.seconds + this.ratio * this.firsts.totalAt(now, later);
    if (this.retries.totalAt(now, later) + 1 <= allowed) return true;
    return this.sends.totalAt(now, later) + 1 <= SENDS_PER_ACCEPTED * this.accepted.totalAt(now, later);
  }
}
