import { Queue } from "bullmq";
import { describe } from "../util/options.js";
import { redisFlag, UsageError } from "./flags.js";

/** The BullMQ queue `enqueue`, `worker` and `status` use when no `--queue` is given. */
export const defaultQueue = "renderguard";

/** The flags every fleet command takes: where the queue is. */
export const queueFlagTable = {
  redis: { type: "string" },
  queue: { type: "string" },
} as const;

/** Where a fleet command's queue is: its Redis URL and its name. */
export interface QueueArgs {
  readonly redis: string;
  readonly queue: string;
}

/** `--redis` (required) and `--queue`, checked: a UsageError names the flag. */
export function queueArgs(values: { readonly redis?: string | undefined; readonly queue?: string | undefined }): QueueArgs {
  const redis = redisFlag(values.redis);
  if (redis === undefined) throw new UsageError("--redis <url> is required: the Redis of the queue");
  const queue = values.queue ?? defaultQueue;
  // BullMQ joins a queue's Redis keys with `:`, and refuses a name that has one.
  if (queue === "" || queue.includes(":")) throw new UsageError(`--queue must be a name without :, got ${describe(queue)}`);
  return { redis, queue };
}

/**
 * The queue named by `args`, for a command that adds jobs or reads counts; the caller closes it. A
 * Redis that cannot be reached fails the command's first call at once: ioredis would otherwise
 * reconnect, and the command wait, for ever. `readOnly` leaves the queue's meta key unwritten:
 * BullMQ writes it on opening, and a command that only reads must not make a mistyped queue exist.
 */
export function openQueue(args: QueueArgs, readOnly = false): Queue {
  const queue = new Queue(args.queue, { connection: { url: args.redis, retryStrategy: () => null }, skipMetasUpdate: readOnly });
  // Each failed call rejects with the error; the event would print it a second time.
  queue.on("error", () => {});
  return queue;
}
