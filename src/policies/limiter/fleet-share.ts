/** How long one window of grants counts for, in milliseconds: a share is read over the last two. */
const WINDOW_MS = 2_000;

/** From a window's first grant on: when it began, the fleet's seq then and at its last grant, and its own grants. */
interface Window {
  readonly startAt: number;
  readonly startSeq: number;
  lastSeq: number;
  own: number;
}

/**
 * A process's part of its fleet's sends, from the sends it was granted and their seq (the fleet's
 * count of sends): 3 of the fleet's last 9 is a third. All, until it was granted two.
 */
export class FleetShare {
  private current: Window | undefined;
  private previous: Window | undefined;

  granted(now: number, seq: number): void {
    // A seq no higher than the last one's: Redis lost its state and counts anew.
    if (this.current && seq <= this.current.lastSeq) this.current = this.previous = undefined;
    if (!this.current || now - this.current.startAt >= WINDOW_MS) {
      this.previous = this.current;
      this.current = { startAt: now, startSeq: seq, lastSeq: seq, own: 0 };
    }
    this.current.own++;
    this.current.lastSeq = seq;
  }

  /** Its part, over 0 and at most 1. */
  share(): number {
    const { current, previous } = this;
    if (!current) return 1;
    const own = current.own + (previous?.own ?? 0);
    if (own < 2) return 1;
    // Its grants after its first, among the fleet's sends after that first.
    return Math.min(1, (own - 1) / (current.lastSeq - (previous ?? current).startSeq));
  }
}
