import { existsSync, renameSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { outputFileName } from "../batch/file-name.js";
import { type Journal, requestSha256 } from "../batch/journal.js";
import type { BatchJob } from "../batch/render-many.js";
import type { ClientStats, RenderClient } from "../client.js";
import type { JobFailure } from "./failure-report.js";
import type { SourceItem } from "./sources.js";

/** Where a batch stands; the progress display and the summary read it. */
export interface BatchTally {
  /** Jobs read so far (invalid lines and journal skips included). */
  seen: number;
  rendered: number;
  /** Rendered by an earlier run, per the journal: not sent again. */
  skipped: number;
  /** Failures by code; lines that were not jobs count as `invalid_request`. */
  readonly failed: Record<string, number>;
  /**
   * Jobs the client answered in this run, rendered or failed: the run's own throughput. Jobs the
   * journal or the input check settled at once are not in it, so they do not speed up the ETA.
   */
  answered: number;
  /**
   * Jobs left in the input when a stop came (Ctrl+C, an output that could not be written): never
   * sent. Undefined when some were left but the input's size is not known.
   */
  notStarted: number | undefined;
  /** Jobs a stop ended between two sends (waiting for a slot or a `Retry-After`): free, sent again by a rerun. */
  stopped: number;
  /** Resends after a backoff: one after a `Retry-After` was paced by the service, and is not counted. */
  retries: number;
}

/** The tally of a batch that has read nothing yet. */
export function emptyTally(): BatchTally {
  return { seen: 0, rendered: 0, skipped: 0, failed: {}, answered: 0, notStarted: 0, stopped: 0, retries: 0 };
}

/** True when every job of the input was rendered, in this run or an earlier one: the exit code says so. */
export function everyDocumentExists(tally: Readonly<BatchTally>): boolean {
  return Object.keys(tally.failed).length === 0 && tally.notStarted === 0 && tally.stopped === 0;
}

export interface RunBatchOptions {
  readonly client: RenderClient;
  readonly items: AsyncIterable<SourceItem>;
  readonly outDir: string;
  readonly journal?: Journal | undefined;
  /** The service's origin (`https://host:port` of the base URL), journaled with each job. */
  readonly origin?: string | undefined;
  readonly concurrency: number;
  /** Items in the input (jobs and lines that are not), when known: the jobs never started are counted against it. */
  readonly total?: number | undefined;
  /**
   * Stops pulling new jobs and ends the waits of those in progress; the ones whose request is out
   * get their answer, saved as usual.
   */
  readonly stop?: AbortSignal;
  /** Aborts the jobs in progress too. */
  readonly abort?: AbortSignal;
  /** Told of every problem with the input, and every failed job (with `failure`, to fold repeats). */
  readonly report: (line: string, failure?: JobFailure) => void;
  /** Told after every finished job. */
  readonly onProgress?: (tally: Readonly<BatchTally>, stats: ClientStats) => void;
}

export interface BatchOutcome {
  readonly tally: Readonly<BatchTally>;
  readonly stats: ClientStats;
}

/**
 * The batch job: reads jobs, skips those the journal has with the same request (renders again one
 * whose request changed, and says so), renders the rest through the client, writes each output as
 * `<id>.pdf` (atomically: a temporary file, then a rename) and journals it in the same turn, with its
 * request's hash and the service's origin, so a crash never leaves a journal entry without its file.
 * A job journaled under another origin is kept, not billed again, with a line naming both.
 */
export async function runBatch(options: RunBatchOptions): Promise<BatchOutcome> {
  const { client, journal, report } = options;
  const tally = emptyTally();
  const fail = (code: string) => {
    tally.failed[code] = (tally.failed[code] ?? 0) + 1;
  };
  await mkdir(options.outDir, { recursive: true });

  const outputOf = (id: string) => join(options.outDir, outputFileName(id));
  // A stop, or an output that could not be written, drains the batch: no new job, no more waits.
  const cannotWrite = new AbortController();
  const stop = options.stop ? AbortSignal.any([options.stop, cannotWrite.signal]) : cannotWrite.signal;
  // Every id of this run by its lower case, journaled or not: a repeated one names a document that
  // can never exist, and ids that differ only in case name one file on macOS and Windows disks.
  const ids = new Map<string, string>();
  // The request hash of each job sent, until its outcome is journaled.
  const sentAs = new Map<string, string>();
  const { origin } = options;
  // Origins of earlier runs already reported: one line each, not one a job.
  const otherOrigins = new Set<string>();

  /** The job when it is to be sent; otherwise counts the item and says why it is not. */
  const toSend = (item: SourceItem): BatchJob | undefined => {
    if (item.kind === "invalid") {
      report(`${item.where}: skipped, ${item.message}`);
      fail("invalid_request");
      return undefined;
    }
    const { id } = item.job;
    const sameFile = ids.get(id.toLowerCase());
    if (sameFile !== undefined) {
      const clash =
        sameFile === id
          ? "appeared before in this batch"
          : `differs only in case from ${JSON.stringify(sameFile)} earlier in this batch (one file on macOS and Windows disks)`;
      report(`${item.where}: skipped, the id ${JSON.stringify(id)} ${clash}`);
      fail("invalid_request");
      return undefined;
    }
    ids.set(id.toLowerCase(), id);
    const bodySha256 = requestSha256(item.job);
    if (journal?.changed(id, bodySha256)) {
      report(`${item.where}: ${id} changed since an earlier run: rendering it again`);
    }
    if (!journal?.has(id, bodySha256)) {
      sentAs.set(id, bodySha256);
      return item.job;
    }
    const earlierOrigin = journal.origin(id);
    if (origin !== undefined && earlierOrigin !== undefined && earlierOrigin !== origin && !otherOrigins.has(earlierOrigin)) {
      // Paid for there already: sending it here is the user's call (a new --journal), not a rerun's.
      otherOrigins.add(earlierOrigin);
      report(
        `${item.where}: ${id} was rendered by ${earlierOrigin}, not by ${origin}: kept, not sent again, as is every job journaled there (a new --journal sends them, billed again)`,
      );
    }
    const earlier = journal.failure(id);
    if (earlier) {
      // It may have cost a render (render_failed, or billing unknown): not sent again, not rendered.
      const resend = journal.uncertain(id) ? "; --resend-unknown sends it again" : "";
      report(`${item.where}: not sent again, it failed in an earlier run with ${earlier} (see the journal${resend})`);
      fail(earlier);
    } else if (existsSync(outputOf(id))) {
      tally.skipped++;
    } else {
      const missing = `${item.where}: rendered in an earlier run, but ${outputOf(id)} is missing`;
      if (journal.resendsUnknown) {
        report(`${missing}: rendering it again (--resend-unknown)`);
        sentAs.set(id, bodySha256);
        return item.job;
      }
      // Paid for once already: rendering it again is the user's call, and until then it is missing.
      report(`${missing} (--resend-unknown renders it again, billed again)`);
      fail("output_missing");
    }
    return undefined;
  };

  // Set once the input was read to its end; an abort can leave this generator suspended at a
  // yield, so what was never started is counted after the batch, not here.
  let readToEnd = false;
  async function* jobs(): AsyncGenerator<BatchJob> {
    for await (const item of options.items) {
      if (stop.aborted || options.abort?.aborted) return;
      tally.seen++;
      const job = toSend(item);
      if (job) yield job;
      else options.onProgress?.(tally, client.stats()); // skipped or failed unsent: the count moved
    }
    readToEnd = true;
    if (tally.seen === 0) report("warning: the input holds no jobs, nothing to render");
  }

  const retried = client.onRetry(({ reason }) => {
    if (reason === "backoff") tally.retries++;
  });
  try {
    for await (const outcome of client.renderMany(jobs(), {
      concurrency: options.concurrency,
      stop,
      ...(options.abort ? { signal: options.abort } : {}),
    })) {
      tally.answered++;
      if (!outcome.ok && stop.aborted && outcome.error.code === "aborted" && outcome.error.billed === false) {
        tally.stopped++; // ended between sends by the stop: free, and a rerun sends it
        options.onProgress?.(tally, client.stats());
        continue;
      }
      const sent = { bodySha256: sentAs.get(outcome.id), origin };
      sentAs.delete(outcome.id);
      if (outcome.ok) {
        const output = outputOf(outcome.id);
        const partial = `${output}.partial`;
        // Written, renamed and journaled synchronously, in the turn the answer came in: only promise
        // continuations lie between its last byte and its journal line, and the request that takes
        // its send slot goes on the wire after them (undici writes it later), so a kill finds no more
        // renders billed and unjournaled than the sends in flight, at most --concurrency. Awaited
        // writes let answers queue behind them while new sends went out.
        try {
          writeFileSync(partial, outcome.result.body);
          renameSync(partial, output);
        } catch (error) {
          // Billed, but not saved (a full disk, say): journal it so a rerun does not bill it again,
          // start no more jobs, and still save the ones in progress where possible.
          cannotWrite.abort();
          journal?.record({ id: outcome.id, ok: false, code: "output_not_written", billed: true, ...sent });
          report(`${outcome.id}: rendered and billed, but ${output} could not be written: ${(error as Error).message}`);
          fail("output_not_written");
          options.onProgress?.(tally, client.stats());
          continue;
        }
        journal?.record({ id: outcome.id, ok: true, billed: true, output, ...sent });
        tally.rendered++;
      } else {
        const { error } = outcome;
        // A wrong setup is not the job's end: what answered was not the service, so once the user
        // fixes the base URL, the rerun sends it (a journaled maybe-billed job would be skipped).
        if (error.code !== "setup_failed") journal?.record({ id: outcome.id, ok: false, code: error.code, billed: error.billed, ...sent });
        const cause = `${error.code}${error.status ? ` (${error.status})` : ""}: ${error.message}`;
        report(`${outcome.id}: ${cause}`, { id: outcome.id, code: error.code, cause });
        fail(error.code);
      }
      options.onProgress?.(tally, client.stats());
    }
  } finally {
    retried.dispose();
  }
  if (!readToEnd) tally.notStarted = options.total === undefined ? undefined : Math.max(0, options.total - tally.seen);
  journal?.sync();
  return { tally, stats: client.stats() };
}
