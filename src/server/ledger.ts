import type { SpecErrorCode } from "../core/spec.js";

/**
 * How a request ended:
 * - `rendered`: 200 with a PDF;
 * - `error`: the service's JSON error body (`code` says which);
 * - `proxy`: an HTML page from the proxy in front (502 or 503);
 * - `reset`: the connection was reset with no response;
 * - `aborted`: the client went away before an answer was sent.
 */
export type LedgerOutcome = "rendered" | "error" | "proxy" | "reset" | "aborted";

/** One request the server received. Holds the key's id, never its secret. */
export interface LedgerEntry {
  /** 1 for the first request the server received. */
  readonly seq: number;
  /** Arrival time, in milliseconds since the epoch (from the server's clock). */
  readonly at: number;
  /** Arrival time, in milliseconds since the server started. */
  readonly elapsedMs: number;
  readonly method: string;
  readonly path: string;
  /** Id of the key named by the `Authorization` header; null when it names no known key. */
  readonly keyId: string | null;
  /** sha256 of the raw request body, hex. */
  readonly bodySha256: string;
  /** Size of the raw request body, in bytes. */
  readonly bodyBytes: number;
  /** HTTP status sent; null when none was (`reset`, `aborted`). */
  readonly status: number | null;
  /** The spec code of an `error` outcome; null otherwise. */
  readonly code: SpecErrorCode | null;
  readonly outcome: LedgerOutcome;
  /** The wait the answer's `Retry-After` asked for, in milliseconds before rounding; null when it had none. */
  readonly retryAfterMs: number | null;
  /** True when the rendering engine ran: a success, `render_failed`, or a render whose answer was lost. */
  readonly billed: boolean;
}

/** Which entries to count: every field given must match. */
export type LedgerFilter = Partial<Pick<LedgerEntry, "keyId" | "bodySha256" | "status" | "code" | "outcome">>;

const matches = (entry: LedgerEntry, filter: LedgerFilter): boolean =>
  Object.entries(filter).every(([field, value]) => entry[field as keyof LedgerFilter] === value);

/**
 * The server's billing ledger: a read-only, append-only list, in the order requests finished.
 * `GET /_ledger` is not recorded, nor is a request whose body never fully arrived.
 */
export class Ledger implements Iterable<LedgerEntry> {
  private readonly list: LedgerEntry[] = [];

  /** Number of entries. */
  get length(): number {
    return this.list.length;
  }

  /** The entry at `index` (negative counts from the end), like `Array.prototype.at`. */
  at(index: number): LedgerEntry | undefined {
    return this.list.at(index);
  }

  /** A frozen copy of every entry. */
  entries(filter: LedgerFilter = {}): readonly LedgerEntry[] {
    return Object.freeze(this.list.filter((e) => matches(e, filter)));
  }

  /** Entries matching `filter`. */
  count(filter: LedgerFilter = {}): number {
    return this.entries(filter).length;
  }

  /** Billed entries matching `filter`: what the account would be charged for. */
  billedCount(filter: LedgerFilter = {}): number {
    return this.entries(filter).filter((e) => e.billed).length;
  }

  /** The entries, oldest first. */
  [Symbol.iterator](): Iterator<LedgerEntry> {
    return this.entries()[Symbol.iterator]();
  }

  /** The billed count and every entry, as `GET /_ledger` serves them. */
  toJSON(): { readonly billed: number; readonly entries: readonly LedgerEntry[] } {
    return { billed: this.billedCount(), entries: this.entries() };
  }

  /** Appends an entry. Only the server calls this. @internal */
  record(entry: LedgerEntry): void {
    this.list.push(Object.freeze(entry));
  }
}
