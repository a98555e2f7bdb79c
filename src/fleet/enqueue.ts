import type { JobsOptions, Queue } from "bullmq";
import { isSafeId } from "../batch/file-name.js";
import { requestSha256 } from "../batch/journal.js";
import type { BatchJob } from "../batch/render-many.js";
import { describe } from "../util/options.js";
import { billingOfJob } from "./job-billing.js";
import { LATEST_KEY, noteRemovedJobBilling } from "./queue-notes.js";

/** What `enqueueRenders` did. */
export interface EnqueueResult {
  /** Jobs added to the queue. */
  readonly added: number;
  /** Jobs the queue already held, with the same request: not added again. */
  readonly existing: number;
}

/** Jobs added in one round trip. */
const CHUNK = 500;

/** States of a job no worker has taken yet. */
const WAITING = new Set(["waiting", "delayed", "prioritized", "waiting-children"]);

/**
 * The options of every job `enqueueRenders` adds. BullMQ's attempts only ever resend what cost
 * nothing: the worker fails for good (`UnrecoverableError`) every render that was or may have been
 * billed, and returns a job held back by a rate limit or a quota to wait without spending one. A
 * free failure that outlasted the client's own retries (a run of `internal_error`) is tried twice
 * more, 5 s and then 10 s later. Finished jobs are kept: a kept job is what makes enqueueing the
 * same document again add nothing.
 */
export const renderJobOptions: Readonly<Pick<JobsOptions, "attempts" | "backoff">> = Object.freeze({
  attempts: 3,
  backoff: { type: "exponential", delay: 5_000 },
});

/**
 * A job's id in the queue: the document's id, `-`, and the first 16 hex digits of its request's
 * sha256 (`requestSha256`): the same document gets the same id, a changed one another.
 */
export function renderJobId(job: BatchJob): string {
  return `${job.id}-${requestSha256(job).slice(0, 16)}`;
}

/**
 * Adds render jobs (`{ id, html, …request fields }`) to a BullMQ queue, idempotently: each job's
 * id is `renderJobId`, so a document the queue already holds with the same request (waiting, done
 * or failed) is not added again, and a changed one is. The queue keeps which version of each
 * document came last, so a document changed back to an earlier version renders again (its old
 * job, finished, is replaced, and what it billed noted beside the queue for `status`), and a
 * version still waiting when a newer one comes is dropped unsent. Ids must be 1-200 of A-Z a-z
 * 0-9 . _ - (no leading dot), as they name the output files; `rendered` is the worker's field. A
 * job that breaks either throws a TypeError, and the jobs before it stay added. `queue` is the
 * `Queue` object, where `createRenderWorker` takes its name.
 */
export async function enqueueRenders(queue: Queue, jobs: Iterable<BatchJob> | AsyncIterable<BatchJob>): Promise<EnqueueResult> {
  // createRenderWorker takes the queue's name: given here, it would fail as "getBackend is not a function".
  if (typeof (queue as Partial<Queue> | null)?.getBackend !== "function") {
    throw new TypeError(`Expected \`queue\` to be a BullMQ Queue (new Queue(name, { connection })), got ${describe(queue)}.`);
  }
  let added = 0;
  let existing = 0;
  let chunk: BatchJob[] = [];
  const flush = async () => {
    const redis = await queue.getBackend().client;
    const latestKey = queue.toKey(LATEST_KEY);
    const ids = chunk.map(renderJobId);
    const [states, latest] = await Promise.all([Promise.all(ids.map((id) => queue.getJobState(id))), redis.hmget(latestKey, ...chunk.map((job) => job.id))]);
    const fresh: BatchJob[] = [];
    const freshIds: string[] = [];
    for (const [i, job] of chunk.entries()) {
      const id = ids[i] as string;
      const last = latest[i] ?? null;
      // Held, and the last version enqueued (or enqueued before the queue kept versions): nothing to do.
      if (states[i] !== "unknown" && (last === null || last === id)) continue;
      // An earlier version coming back: its old job goes, unless a worker holds it right now.
      if (states[i] !== "unknown" && !(await removeKeepingBilling(queue, id))) continue;
      // The version it replaces, if no worker took it yet, is never sent.
      if (last !== null && last !== id && WAITING.has(await queue.getJobState(last))) await queue.remove(last);
      fresh.push(job);
      freshIds.push(id);
    }
    if (fresh.length > 0) await queue.addBulk(fresh.map((job, i) => ({ name: "render", data: job, opts: { ...renderJobOptions, jobId: freshIds[i] as string } })));
    await redis.hset(latestKey, Object.fromEntries(chunk.map((job, i) => [job.id, ids[i] as string])));
    added += fresh.length;
    existing += chunk.length - fresh.length;
    chunk = [];
  };
  for await (const job of jobs) {
    checkJob(job);
    chunk.push(job);
    if (chunk.length >= CHUNK) await flush();
  }
  if (chunk.length > 0) await flush();
  return { added, existing };
}

/**
 * Removes the job `id` unless a worker holds it, and resolves with whether it did. What the job
 * billed goes with it, so it is read first and, once the job is gone, noted beside the queue
 * (`noteRemovedJobBilling`): `status` counts it still.
 */
async function removeKeepingBilling(queue: Queue, id: string): Promise<boolean> {
  const [state, job] = await Promise.all([queue.getJobState(id), queue.getJob(id)]);
  // Active yet removable: its worker lost the lock (died), or finished it since: maybe billed.
  const billing = state === "active" ? "unknown" : billingOfJob(state, job?.failedReason);
  if ((await queue.remove(id)) === 0) return false;
  if (billing !== false && job !== undefined) await noteRemovedJobBilling(queue, { id, timestamp: job.timestamp }, billing);
  return true;
}

function checkJob(job: unknown): asserts job is BatchJob {
  const { id, html } = (job ?? {}) as Partial<BatchJob>;
  if (!isSafeId(id)) throw new TypeError(`Expected each job's \`id\` to be 1-200 of A-Z a-z 0-9 . _ - (no leading dot), got ${JSON.stringify(id)}.`);
  if (typeof html !== "string") throw new TypeError(`Expected the \`html\` of job ${id} to be a string.`);
  if (Object.hasOwn(job as object, "rendered")) throw new TypeError(`Job ${id} has a \`rendered\` field: the worker keeps its record there.`);
}
