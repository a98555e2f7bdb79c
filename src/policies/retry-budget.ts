import { WindowCounter } from "./window-counter.js";

/**
 * A retry budget (as in Finagle and gRPC): retries may add at most `ratio` of recent first sends,
 * plus a small floor, so that jobs failing together never multiply the load on a struggling service.
 */
export class RetryBudget {
  private readonly firsts: WindowCounter;
  private readonly retries: WindowCounter;

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
  }

  /** Notes a job's first send. */
  recordFirst(now: number): void {
    this.firsts.add(now);
  }

  /** Takes one retry from the budget; false when the budget is spent. */
  tryRetry(now: number): boolean {
    const allowed = this.minPerSecond * this.firsts.seconds + this.ratio * this.firsts.total(now);
    if (this.retries.total(now) + 1 > allowed) return false;
    this.retries.add(now);
    return true;
  }
}
