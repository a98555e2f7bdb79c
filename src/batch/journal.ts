import { createHash } from "node:crypto";
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from "node:fs";
import type { Billed, RenderErrorCode } from "../core/errors.js";
import type { BatchJob } from "./render-many.js";

/** One finished job, as a line of the journal. */
export interface JournalEntry {
  readonly id: string;
  readonly ok: boolean;
  /** The failure's code, for a failed job; `output_not_written` when it rendered but could not be saved. */
  readonly code?: JournalFailure;
  readonly billed: Billed;
  /** Where the output went, for a rendered job. */
  readonly output?: string;
  /** The job's `requestSha256`: what was rendered. Absent in a journal written before it was kept. */
  readonly bodySha256?: string;
  /** The service that rendered it, or failed it: the origin of the base URL (`https://host:port`). */
  readonly origin?: string;
  /** When it finished, ISO 8601. */
  readonly at: string;
}

/** Why a journaled job failed. */
export type JournalFailure = RenderErrorCode | "output_not_written";

/** A line of the journal that could not be read, with its 1-based number. */
export interface JournalProblem {
  readonly line: number;
  readonly message: string;
}

/** How a journal reads what earlier runs recorded. */
export interface JournalOptions {
  /**
   * Counts jobs that may have been billed without leaving a document (billing unknown, such as
   * `response_lost` or `aborted` mid-send, and `output_not_written`) as unfinished, so they are
   * sent again and may be billed twice. `render_failed` is never sent again: it would fail again.
   *
   * @default false
   */
  readonly resendUnknown?: boolean;
}

/** True for a failure that may have been billed but left no document: `resendUnknown` sends it again. */
function isUncertain(entry: Pick<JournalEntry, "code" | "billed">): boolean {
  return entry.billed === "unknown" || entry.code === "output_not_written";
}

/**
 * sha256 (hex) of the request body a job is sent as: the JSON of every field of the job but its
 * `id` (`html` and any other field the service reads), in the job's own key order, the bytes the
 * client sends. The reference server's ledger keeps the same hash of each request it received.
 */
export function requestSha256(job: BatchJob): string {
  const { id: _id, ...request } = job;
  return createHash("sha256").update(JSON.stringify(request)).digest("hex");
}

/** What the journal keeps of a finished job. */
type Finished = Pick<JournalEntry, "bodySha256" | "origin"> & {
  /** Why it failed; undefined for one that rendered. */
  readonly failure?: Pick<JournalEntry, "code" | "billed">;
};

/** Entries written between two fsyncs at most; a crash of the process loses none (the OS has them). */
const SYNC_EVERY = 64;

/**
 * An append-only JSONL file of finished jobs, so that a batch killed at any moment resumes without
 * rendering, and paying for, a finished document again. A job is finished when it rendered, or when
 * it may have cost a render (`render_failed`, or billing unknown): those are not sent again, unless
 * `resendUnknown` says so for the uncertain ones. Free failures are, on the next run. A job whose
 * request changed since (another `requestSha256`) is not finished: what was rendered is not what is
 * asked for now. An entry from a journal written before hashes were kept is taken to match any
 * request, so an older journal bills nothing again. A corrupt or truncated line (a crash mid-write)
 * is reported in `problems` and skipped, never fatal.
 */
export class Journal {
  /** Finished jobs, by id: what was sent and where, and why it failed if it did. */
  private readonly finished = new Map<string, Finished>();
  private readonly fd: number;
  private unsynced = 0;
  readonly problems: readonly JournalProblem[];

  private constructor(
    readonly path: string,
    problems: JournalProblem[],
    /** Jobs that may have been billed with no document left are sent again (`resendUnknown`). */
    readonly resendsUnknown: boolean,
  ) {
    this.problems = problems;
    this.fd = openSync(path, "a");
  }

  /** Opens `path`, reading what an earlier run recorded; creates the file when there is none. */
  static open(path: string, options: JournalOptions = {}): Journal {
    const problems: JournalProblem[] = [];
    const text = existsSync(path) ? readFileSync(path, "utf8") : "";
    const lines = text.split("\n");
    const journal = new Journal(path, problems, options.resendUnknown ?? false);
    lines.forEach((line, index) => {
      if (line.trim() === "") return;
      const entry = parseEntry(line);
      if (typeof entry === "string") problems.push({ line: index + 1, message: entry });
      else journal.remember(entry);
    });
    // A line cut short by a crash gets its own line end, so the next entry starts clean.
    if (text.length > 0 && !text.endsWith("\n")) writeSync(journal.fd, "\n");
    return journal;
  }

  /**
   * True when an earlier run finished this job: skip it. Given the job's `requestSha256`, only if
   * that run sent the same request.
   */
  has(id: string, bodySha256?: string): boolean {
    const finished = this.finished.get(id);
    return finished !== undefined && !isChanged(finished, bodySha256);
  }

  /** True when an earlier run finished this job with another request than `bodySha256`. */
  changed(id: string, bodySha256: string): boolean {
    const finished = this.finished.get(id);
    return finished !== undefined && isChanged(finished, bodySha256);
  }

  /** The origin of the service that finished this job, when the journal recorded it. */
  origin(id: string): string | undefined {
    return this.finished.get(id)?.origin;
  }

  /** For a finished job that failed (say `render_failed`), its code; undefined otherwise. */
  failure(id: string): JournalFailure | undefined {
    return this.finished.get(id)?.failure?.code;
  }

  /** True for a finished job that may have been billed but left no document (see `isUncertain`). */
  uncertain(id: string): boolean {
    const failure = this.finished.get(id)?.failure;
    return failure !== undefined && isUncertain(failure);
  }

  /** Appends one finished job. Call it after the job's output is safely written. */
  record(entry: Omit<JournalEntry, "at">, now = new Date()): void {
    writeSync(this.fd, `${JSON.stringify({ ...entry, at: now.toISOString() })}\n`);
    this.remember(entry);
    if (++this.unsynced >= SYNC_EVERY) this.sync();
  }

  private remember(entry: Omit<JournalEntry, "at">): void {
    const sent = { bodySha256: entry.bodySha256, origin: entry.origin };
    if (entry.ok) this.finished.set(entry.id, sent);
    else if (entry.billed !== false && !(this.resendsUnknown && isUncertain(entry))) {
      this.finished.set(entry.id, { ...sent, failure: { code: entry.code, billed: entry.billed } });
    }
  }

  /** Forces what was recorded to disk. */
  sync(): void {
    fsyncSync(this.fd);
    this.unsynced = 0;
  }

  /** Flushes what was appended to disk and closes the file. */
  close(): void {
    this.sync();
    closeSync(this.fd);
  }
}

/** True when the job was journaled with another request than `bodySha256`; an entry with no hash matches any. */
function isChanged(finished: Finished, bodySha256: string | undefined): boolean {
  return bodySha256 !== undefined && finished.bodySha256 !== undefined && finished.bodySha256 !== bodySha256;
}

/** The entry on a line, or why it is not one. */
function parseEntry(line: string): JournalEntry | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return "not JSON (a write cut short?)";
  }
  const entry = value as Partial<JournalEntry> | null;
  if (typeof entry?.id !== "string" || typeof entry.ok !== "boolean") return "not a journal entry (no id or ok)";
  if (entry.billed !== true && entry.billed !== false && entry.billed !== "unknown") return "no billed field";
  return entry as JournalEntry;
}
