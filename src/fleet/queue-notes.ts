import type { Queue } from "bullmq";

/**
 * Why the queue waits, as the worker that made it wait said: a key of its own, expiring with the
 * wait. `queue.obliterate()` leaves it, as it leaves BullMQ's rate limit, and the two end together.
 */
const WAIT_KEY = "renderguard:wait";
/** The queue's hash of each document's id to the job id of its version enqueued last (`enqueueRenders`). */
export const LATEST_KEY = "renderguard:latest";
/**
 * What is counted is kept as fields of the queue's meta hash, which `queue.obliterate()` deletes:
 * a queue made again under the same name starts with no billing of the old one's. A field a job,
 * so a job noted twice counts once; there are few (a dead worker's jobs in flight, a document
 * changed back to an earlier version). A job completed after a stall is noted by its id, so that
 * `status` need not read every completed job; a finished job `enqueueRenders` removed, by its id
 * and when it was added, with what it billed: `billed` or `unknown`.
 */
const STALLED_FIELD = "renderguard:completed-after-stall:";
const REMOVED_BILLING_FIELD = "renderguard:billed-by-removed-job:";

/**
 * What the fleet's workers and `enqueueRenders` note beside a queue, for `renderguard status`: why
 * the queue waits out a rate limit, how many jobs completed after a stall, and what the jobs
 * enqueueing removed billed.
 */
export interface QueueNotes {
  /** Why the queue's rate limit was set (`code (status): message`), while it lasts; undefined when none says. */
  readonly waitingBecause: string | undefined;
  /** Jobs completed by a worker after an earlier one stalled on them. */
  readonly completedAfterStall: number;
  /** What the finished jobs `enqueueRenders` removed (to add an earlier version again) had billed: renders billed, and renders whose billing is unknown. */
  readonly removedJobs: { readonly billed: number; readonly possiblyBilled: number };
}

/**
 * renderguard's keys beside `queue` that `queue.obliterate()` leaves: the wait's note (it expires)
 * and which version of each document came last (harmless once its jobs are gone). For a queue that
 * is done with for good, as the demo's is.
 */
export function keysObliterateLeaves(queue: Queue): string[] {
  return [queue.toKey(WAIT_KEY), queue.toKey(LATEST_KEY)];
}

/** Notes why the whole queue waits `ms`: the note expires when the wait does. */
export async function noteWait(queue: Queue, ms: number, reason: string): Promise<void> {
  const redis = await queue.getBackend().client;
  await redis.set(queue.toKey(WAIT_KEY), reason, { PX: Math.max(1, Math.ceil(ms)) });
}

/** Ends the whole queue's wait, and its note: the workers take jobs again at their next look (BullMQ's `maximumRateLimitDelay`). */
export async function endWait(queue: Queue): Promise<void> {
  const redis = await queue.getBackend().client;
  await Promise.all([queue.removeRateLimitKey(), redis.del(queue.toKey(WAIT_KEY))]);
}

/** Notes a job completed after a stall; a job noted twice counts once. */
export async function noteCompletedAfterStall(queue: Queue, jobId: string): Promise<void> {
  const redis = await queue.getBackend().client;
  await redis.hset(queue.toKey("meta"), { [`${STALLED_FIELD}${jobId}`]: 1 });
}

/** Notes what a finished job removed from `queue` had billed, so that `status` still counts it. */
export async function noteRemovedJobBilling(queue: Queue, job: { readonly id: string; readonly timestamp: number }, billing: true | "unknown"): Promise<void> {
  const redis = await queue.getBackend().client;
  await redis.hset(queue.toKey("meta"), { [`${REMOVED_BILLING_FIELD}${job.id}@${job.timestamp}`]: billing === true ? "billed" : "unknown" });
}

/** Reads what was noted beside `queue`. */
export async function readQueueNotes(queue: Queue): Promise<QueueNotes> {
  const redis = await queue.getBackend().client;
  const [waitingBecause, meta] = await Promise.all([redis.get(queue.toKey(WAIT_KEY)), redis.hgetall(queue.toKey("meta"))]);
  const fields = Object.entries(meta);
  const billings = fields.filter(([field]) => field.startsWith(REMOVED_BILLING_FIELD)).map(([, billing]) => billing);
  const billed = billings.filter((billing) => billing === "billed").length;
  return {
    waitingBecause: waitingBecause ?? undefined,
    completedAfterStall: fields.filter(([field]) => field.startsWith(STALLED_FIELD)).length,
    removedJobs: { billed, possiblyBilled: billings.length - billed },
  };
}
