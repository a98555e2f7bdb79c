import { createReadStream } from "node:fs";
import { opendir, readFile } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import type { BatchJob } from "../batch/render-many.js";
import { boundedLines } from "./lines.js";

/** A job read from input, or a line that could not be one (reported, and counted as failed). */
export type SourceItem =
  | { readonly kind: "job"; readonly job: BatchJob; readonly where: string }
  | { readonly kind: "invalid"; readonly id: string; readonly where: string; readonly message: string };

/** Ids become file names: letters, digits, `.`, `_` and `-` only, no leading dot, at most 200 long. */
const SAFE_ID = /^(?!\.)[A-Za-z0-9._-]{1,200}$/;

const BYTE_ORDER_MARK = "\uFEFF";

/** Options of a JSONL source. */
export interface JobsFileOptions {
  /**
   * Longest line, in bytes. A longer one is reported as `invalid` with its line number and skipped,
   * without ever being held in memory whole.
   *
   * @default 64 * 1024 * 1024
   */
  readonly maxLineBytes?: number;
}

export const jobsFileDefaults = Object.freeze({ maxLineBytes: 64 * 1024 * 1024 });

/** Jobs from a JSONL file, opened when the first job is asked for: see {@link readJobsStream}. */
export async function* readJobsFile(path: string, options: JobsFileOptions = {}): AsyncGenerator<SourceItem> {
  yield* readJobsStream(createReadStream(path), path, options);
}

/**
 * Jobs from a JSONL byte stream (a file, standard input), one `{ "id", "html", … }` a line, read
 * once. A UTF-8 byte order mark at the start of a line is ignored. A line that is not such an
 * object, or is longer than `maxLineBytes`, is yielded as `invalid` with its line number
 * (`name:line`); the batch goes on.
 */
export async function* readJobsStream(
  input: AsyncIterable<Uint8Array>,
  name: string,
  options: JobsFileOptions = {},
): AsyncGenerator<SourceItem> {
  const maxLineBytes = options.maxLineBytes ?? jobsFileDefaults.maxLineBytes;
  let number = 0;
  for await (const line of boundedLines(input, maxLineBytes)) {
    number++;
    const where = `${name}:${number}`;
    if (line.kind === "too_long") {
      yield { kind: "invalid", id: `line-${number}`, where, message: `longer than ${maxLineBytes} bytes` };
      continue;
    }
    // Editors on Windows start a UTF-8 file with a byte order mark, and `cat` of such files puts one
    // at the start of a later line: JSON.parse refuses it, and the error shows an invisible character.
    const text = line.text.startsWith(BYTE_ORDER_MARK) ? line.text.slice(1) : line.text;
    if (text.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      yield { kind: "invalid", id: `line-${number}`, where, message: `not JSON: ${(error as Error).message}` };
      continue;
    }
    yield toItem(value, where, `line-${number}`);
  }
}

/** Jobs from a folder: each `*.html` file is one, its name without `.html` the id. */
export async function* readHtmlFolder(path: string): AsyncGenerator<SourceItem> {
  const folder = await opendir(path);
  for await (const entry of folder) {
    if (!entry.isFile() || extname(entry.name).toLowerCase() !== ".html") continue;
    const file = join(path, entry.name);
    const html = await readFile(file, "utf8");
    yield toItem({ id: basename(entry.name, extname(entry.name)), html }, file, entry.name);
  }
}

/** Counts the jobs a source will give, for progress and ETA, without holding them. */
export async function countItems(items: AsyncIterable<SourceItem>): Promise<number> {
  let count = 0;
  for await (const _ of items) count++;
  return count;
}

function toItem(value: unknown, where: string, fallbackId: string): SourceItem {
  const job = value as Partial<BatchJob> | null;
  if (typeof job !== "object" || job === null || Array.isArray(job)) {
    return { kind: "invalid", id: fallbackId, where, message: "not a JSON object" };
  }
  const id = typeof job.id === "number" ? String(job.id) : job.id;
  if (id === undefined || id === null) return { kind: "invalid", id: fallbackId, where, message: "missing `id`" };
  if (typeof id !== "string" || !SAFE_ID.test(id)) {
    return { kind: "invalid", id: fallbackId, where, message: "`id` must be 1-200 of A-Z a-z 0-9 . _ - (no leading dot)" };
  }
  if (job.html === undefined || job.html === null) return { kind: "invalid", id, where, message: "missing `html`" };
  if (typeof job.html !== "string") return { kind: "invalid", id, where, message: "`html` must be a string" };
  // The service renders a blank page and bills it (the spec refuses no string); in a batch an empty
  // document is a file or an export gone wrong, so the CLI refuses it and the library does not.
  if (job.html.trim() === "") return { kind: "invalid", id, where, message: "`html` is empty: nothing to render" };
  return { kind: "job", job: { ...job, id, html: job.html }, where };
}
