import type { FaultWindow } from "./scenario.js";

/**
 * Tells a body's first arrival from a resend, by the body's sha256 (the hash the ledger already
 * records), for fault windows with `firstSendOnly`. Memory: one hash per distinct body, and only
 * while such a window can still apply: a scenario without one keeps nothing, and the set is dropped
 * once the last such window has ended.
 */
export class FirstSends {
  private seen: Set<string> | undefined;
  /** End of the last `firstSendOnly` window, in milliseconds after server start. */
  private readonly until: number;

  constructor(faults: readonly FaultWindow[]) {
    const ends = faults.filter((w) => w.firstSendOnly).map((w) => w.toMs ?? Infinity);
    this.until = Math.max(-Infinity, ...ends);
    this.seen = ends.length > 0 ? new Set() : undefined;
  }

  /**
   * Records a request's body, arriving `elapsedMs` after server start. True when the server has not
   * received this body before, whatever the earlier answer was. Once no `firstSendOnly` window can
   * apply any more the answer is moot, and it is false.
   */
  arrive(sha256: string, elapsedMs: number): boolean {
    if (!this.seen) return false;
    if (elapsedMs >= this.until) {
      this.seen = undefined; // no window asks any more: free the hashes
      return false;
    }
    if (this.seen.has(sha256)) return false;
    this.seen.add(sha256);
    return true;
  }
}
