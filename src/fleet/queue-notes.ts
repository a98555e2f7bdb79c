import type { Queue } from "bullmq";

/** Why the queue waits, as the worker that made it wait said; it expires with the wait. */
const WAIT_KEY = "renderguard:wait";
/** The ids of jobs completed after a stall (few: at most a dead worker's jobs in flight a stall), so `status` reads them instead of every completed job. */
const STALLED_KEY = "renderguard:completed-after-stall";
/**
 * What the finished jobs `enqueueRenders` removed had billed: a field a removed job (its id and when
 * it was added, so a job noted twice counts once), `billed` or `unknown`. BullMQ's Redis client has
 * no HINCRBY; removed jobs are few (a document changed back to an earlier version).
 */
const REMOVED_BILLING_KEY = "renderguard:billed-by-removed-jobs";

/**
 * What the fleet's workers and `enqueueRenders` note beside a queue (keys under the queue's own
 * prefix, so `queue.obliterate()` takes them too), for `renderguard status`: why the queue waits out
 * a rate limit, how many jobs completed after a stall, and what the jobs enqueueing removed billed.
 */
export interface QueueNotes {
  /** Why the queue's rate limit was set (`code (status): message`), while it lasts; undefined when none says. */
  readonly waitingBecause: string | undefined;
  /** Jobs completed by a worker after an earlier one stalled on them. */
  readonly completedAfterStall: number;
  /** What the finished jobs `enqueueRenders` removed (to add an earlier version again) had billed: renders billed, and renders whose billing is unknown. */
  readonly removedJobs: { readonly billed: number; readonly possiblyBilled: number };
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
  await redis.hset(queue.toKey(STALLED_KEY), { [jobId]: 1 });
}

/** Notes what a finished job removed from `queue` had billed, so that `status` still counts it. */
export async function noteRemovedJobBilling(queue: Queue, job: { readonly id: string; readonly timestamp: number }, billing: true | "unknown"): Promise<void> {
  const redis = await queue.getBackend().client;
  await redis.hset(queue.toKey(REMOVED_BILLING_KEY), { [`${job.id}@${job.timestamp}`]: billing === true ? "billed" : "unknown" });
}

/** Reads what was noted beside `queue`. */
export async function readQueueNotes(queue: Queue): Promise<QueueNotes> {
  const redis = await queue.getBackend().client;
  const [waitingBecause, stalled, removed] = await Promise.all([
    redis.get(queue.toKey(WAIT_KEY)),
    redis.hgetall(queue.toKey(STALLED_KEY)),
    redis.hgetall(queue.toKey(REMOVED_BILLING_KEY)),
  ]);
  const billings = Object.values(removed);
  const billed = billings.filter((billing) => billing === "billed").length;
  return {
    waitingBecause: waitingBecause ?? undefined,
    completedAfterStall: Object.keys(stalled).length,
    removedJobs: { billed, possiblyBilled: billings.length - billed },
  };
}
