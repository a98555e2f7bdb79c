import { createReadStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { isSafeId } from "../batch/file-name.js";
import type { BatchJob } from "../batch/render-many.js";
import type { HtmlFolder } from "./html-folder.js";
import { boundedLines } from "./lines.js";

/** A job read from input, or a line that could not be one (reported, and counted as failed). */
export type SourceItem =
  | { readonly kind: "job"; readonly job: BatchJob; readonly where: string }
  | { readonly kind: "invalid"; readonly id: string; readonly where: string; readonly message: string };

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

/**
 * Jobs from a folder's HTML files (see {@link listHtmlFolder}), each read when its job is asked
 * for, its id made of its name ({@link idFromFileName}). Files whose names give one id are all
 * reported, each naming the others, and none is rendered: which one `<id>.pdf` should hold is the
 * user's call. A file that cannot be read is reported; the batch goes on.
 */
export async function* readHtmlFolder(folder: HtmlFolder): AsyncGenerator<SourceItem> {
  const namesOf = new Map<string, string[]>();
  for (const { id, name } of folder.files) if (id !== undefined) namesOf.set(id, [...(namesOf.get(id) ?? []), name]);
  for (const { path, name, id } of folder.files) {
    const names = id === undefined ? [] : (namesOf.get(id) ?? []);
    if (id === undefined) {
      yield { kind: "invalid", id: name, where: path, message: "no letter or digit of A-Z a-z 0-9 in the name to make an id of: rename it" };
    } else if (names.length > 1) {
      const quoted = names.map((other) => JSON.stringify(other));
      const list = `${quoted.slice(0, -1).join(", ")} and ${quoted.at(-1)}`;
      yield { kind: "invalid", id, where: path, message: `${list} ${names.length > 2 ? "all" : "both"} give the id ${JSON.stringify(id)}: rename all but one` };
    } else {
      let html: string;
      try {
        html = await readFile(path, "utf8");
      } catch (error) {
        yield { kind: "invalid", id, where: path, message: `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})` };
        continue;
      }
      // A byte order mark before the doctype would put the browser in quirks mode.
      yield toItem({ id, html: html.startsWith(BYTE_ORDER_MARK) ? html.slice(1) : html }, path, id);
    }
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
  if (!isSafeId(id)) {
    return { kind: "invalid", id: fallbackId, where, message: "`id` must be 1-200 of A-Z a-z 0-9 . _ - (no leading dot)" };
  }
  if (job.html === undefined || job.html === null) return { kind: "invalid", id, where, message: "missing `html`" };
  if (typeof job.html !== "string") return { kind: "invalid", id, where, message: "`html` must be a string" };
  // The service renders a blank page and bills it (the spec refuses no string); in a batch an empty
  // document is a file or an export gone wrong, so the CLI refuses it and the library does not.
  if (job.html.trim() === "") return { kind: "invalid", id, where, message: "`html` is empty or only white space: nothing to render" };
  return { kind: "job", job: { ...job, id, html: job.html }, where };
}
