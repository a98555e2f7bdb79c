import type { Queue } from "bullmq";

/** The ids of jobs completed after a stall (few: at most a dead worker's jobs in flight a stall), so `status` reads them instead of every completed job. */
const STALLED_KEY = "renderguard:completed-after-stall";

/**
 * What the fleet's workers note beside a queue (keys under the queue's own prefix, so
 * `queue.obliterate()` takes them too), for `renderguard status`: how many jobs completed after a
 * stall.
 */
export interface QueueNotes {
  /** Jobs completed by a worker after an earlier one stalled on them. */
  readonly completedAfterStall: number;
}

/** Notes a job completed after a stall; a job noted twice counts once. */
export async function noteCompletedAfterStall(queue: Queue, jobId: string): Promise<void> {
  const redis = await queue.getBackend().client;
  await redis.hset(queue.toKey(STALLED_KEY), { [jobId]: 1 });
}

/** Reads what the workers noted beside `queue`. */
export async function readQueueNotes(queue: Queue): Promise<QueueNotes> {
  const redis = await queue.getBackend().client;
  const stalled = await redis.hgetall(queue.toKey(STALLED_KEY));
  return { completedAfterStall: Object.keys(stalled).length };
}
