/** How long a decision on an origin's sockets stands. */
const DECISION_MS = 60_000;

interface Decision {
  readonly fresh: boolean;
  readonly until: number;
}

/**
 * Whether sends to an origin go on kept-alive sockets or on connections of their own. A server that
 * closes a socket under a send that then gets no answer may never have read it (it closes sockets
 * just after responding, or sooner than it says): such a send may have been billed, for all the
 * client knows, and is never resent, so the sends after it go on fresh connections for a minute.
 * A server that closes a fresh connection under its one send too (it resets some after rendering)
 * is not closing stale sockets, which a fresh connection cannot be: a connection a send would cost
 * a handshake each for nothing, so its sends reuse sockets again for the minute.
 */
export class SocketReuse {
  readonly #decisions = new Map<string, Decision>();

  constructor(private readonly now: () => number) {}

  /** Whether a send to `origin` starting now goes on a connection of its own. */
  fresh(origin: string): boolean {
    if (this.#decisions.size === 0) return false;
    const decision = this.#decisions.get(origin);
    return decision !== undefined && decision.fresh && decision.until > this.now();
  }

  /** The server of `origin` closed the socket under a send, sent `fresh` or not, that got no answer. */
  closedUnder(origin: string, fresh: boolean): void {
    const now = this.now();
    const decision = this.#decisions.get(origin);
    if (decision === undefined || decision.until <= now) {
      this.#decisions.set(origin, { fresh: true, until: now + DECISION_MS });
    } else if (decision.fresh && fresh) {
      this.#decisions.set(origin, { fresh: false, until: now + DECISION_MS });
    }
  }

  clear(): void {
    this.#decisions.clear();
  }
}
