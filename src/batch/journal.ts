import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from "node:fs";
import type { Billed, RenderErrorCode } from "../core/errors.js";

/** One finished job, as a line of the journal. */
export interface JournalEntry {
  readonly id: string;
  readonly ok: boolean;
  /** The failure's code, for a failed job; `output_not_written` when it rendered but could not be saved. */
  readonly code?: JournalFailure;
  readonly billed: Billed;
  /** Where the output went, for a rendered job. */
  readonly output?: string;
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

/** Entries written between two fsyncs at most; a crash of the process loses none (the OS has them). */
const SYNC_EVERY = 64;

/**
 * An append-only JSONL file of finished jobs, so that a batch killed at any moment resumes without
 * rendering, and paying for, a finished document again. A job is finished when it rendered, or when
 * it may have cost a render (`render_failed`, or billing unknown): those are not sent again, unless
 * `resendUnknown` says so for the uncertain ones. Free failures are, on the next run. A corrupt or
 * truncated line (a crash mid-write) is reported in `problems` and skipped, never fatal.
 */
export class Journal {
  /** Finished jobs: the failure of one that failed, undefined for one that rendered. */
  private readonly finished = new Map<string, Pick<JournalEntry, "code" | "billed"> | undefined>();
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

  /** True when an earlier run finished this job: skip it. */
  has(id: string): boolean {
    return this.finished.has(id);
  }

  /** For a finished job that failed (say `render_failed`), its code; undefined otherwise. */
  failure(id: string): JournalFailure | undefined {
    return this.finished.get(id)?.code;
  }

  /** True for a finished job that may have been billed but left no document (see `isUncertain`). */
  uncertain(id: string): boolean {
    const failure = this.finished.get(id);
    return failure !== undefined && isUncertain(failure);
  }

  /** Appends one finished job. Call it after the job's output is safely written. */
  record(entry: Omit<JournalEntry, "at">, now = new Date()): void {
    writeSync(this.fd, `${JSON.stringify({ ...entry, at: now.toISOString() })}\n`);
    this.remember(entry);
    if (++this.unsynced >= SYNC_EVERY) this.sync();
  }

  private remember(entry: Omit<JournalEntry, "at">): void {
    if (entry.ok) this.finished.set(entry.id, undefined);
    else if (entry.billed !== false && !(this.resendsUnknown && isUncertain(entry))) {
      this.finished.set(entry.id, { code: entry.code, billed: entry.billed });
    }
  }

  /** Forces what was recorded to disk. */
  sync(): void {
    fsyncSync(this.fd);
    this.unsynced = 0;
  }

  close(): void {
    this.sync();
    closeSync(this.fd);
  }
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
