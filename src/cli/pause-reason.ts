import type { Queue } from "bullmq";
import type { QueueArgs } from "./queue-flags.js";

/** Jobs read for the reason a paused queue gives: the worker that paused it logged it on the job it held. */
const PAUSE_LOG_JOBS = 50;

/** What the fleet worker logs on the job it held when it pauses the queue, before the reason. */
const PAUSE_LOG_PREFIX = "Queue paused: ";

/** The latest `Queue paused: …` a worker logged on a waiting job, without its prefix; undefined when no job says. */
export async function pauseReason(queue: Queue): Promise<string | undefined> {
  let reason: string | undefined;
  for (const job of await queue.getJobs(["wait"], 0, PAUSE_LOG_JOBS - 1)) {
    const { logs } = await queue.getJobLogs(job.id as string);
    for (const line of logs) if (line.startsWith(PAUSE_LOG_PREFIX)) reason = line.slice(PAUSE_LOG_PREFIX.length);
  }
  return reason;
}

/** One line for a paused queue: why, if a job says, and the command that resumes it. */
export function pausedLine(args: QueueArgs, reason: string | undefined): string {
  return `the queue ${args.queue} is paused${reason ? ` (${reason})` : ""}: ${resumeCommandLine(args)} when fixed`;
}

/** The command that resumes the queue of `args`, to copy: its Redis URL with any password as ***. */
export function resumeCommandLine(args: QueueArgs): string {
  const redis = new URL(args.redis);
  if (redis.password) redis.password = "***";
  return `renderguard resume --redis ${redis.href} --queue ${args.queue}`;
}
