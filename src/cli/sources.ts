import { createReadStream } from "node:fs";
import { opendir, readFile } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import { createInterface } from "node:readline";
import type { BatchJob } from "../batch/render-many.js";

/** A job read from input, or a line that could not be one (reported, and counted as failed). */
export type SourceItem =
  | { readonly kind: "job"; readonly job: BatchJob; readonly where: string }
  | { readonly kind: "invalid"; readonly id: string; readonly where: string; readonly message: string };

/** Ids become file names: letters, digits, `.`, `_` and `-` only, no leading dot, at most 200 long. */
const SAFE_ID = /^(?!\.)[A-Za-z0-9._-]{1,200}$/;

/**
 * Jobs from a JSONL file, one `{ "id", "html", … }` a line, read as a stream. A line that is not
 * such an object is yielded as `invalid` with its line number; the batch goes on.
 */
export async function* readJobsFile(path: string): AsyncGenerator<SourceItem> {
  const lines = createInterface({ input: createReadStream(path, "utf8"), crlfDelay: Number.POSITIVE_INFINITY });
  let number = 0;
  for await (const line of lines) {
    number++;
    if (line.trim() === "") continue;
    const where = `${path}:${number}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
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
  if (typeof id !== "string" || !SAFE_ID.test(id)) {
    return { kind: "invalid", id: fallbackId, where, message: "`id` must be 1-200 of A-Z a-z 0-9 . _ - (no leading dot)" };
  }
  if (typeof job.html !== "string") return { kind: "invalid", id, where, message: "`html` must be a string" };
  return { kind: "job", job: { ...job, id, html: job.html }, where };
}
