import type { Queue } from "bullmq";
import type { Billed } from "../core/errors.js";
import { billingOf, failureCode } from "../fleet/job-billing.js";
import { readQueueNotes } from "../fleet/queue-notes.js";
import { NO_QUEUE_LIMIT } from "../fleet/worker.js";
import { parseFlags, UsageError } from "./flags.js";
import { pauseReason } from "./pause-reason.js";
import { checkRedis } from "./redis-check.js";
import { defaultQueue, openQueue, queueArgs, queueFlagTable } from "./queue-flags.js";

export const statusUsage = `Usage: renderguard status --redis <url> [--queue <name>] [--json]

Says where a fleet's queue stands: its jobs by state, the renders billed, the failed jobs by
code, and whether the queue is paused (and why) or waiting out a rate limit (until when, and why).

Billed: one render a job, for each completed job and each failed job whose code bills
(render_failed, response_too_large, response_incomplete, output_not_written, output_missing);
possibly billed: each failed job whose billing is unknown (response_lost, upstream_error,
unexpected_response, aborted, and a reason that is not a code, such as a job that stalled). Jobs
that enqueue replaced (a document changed back to an earlier version) still count; renders billed
outside this queue (a renderguard batch with the same key) do not. Completed after a stall: jobs
whose first worker died or lost its lock mid-job. What that worker had sent may have been billed
once more, and billed does not count it: the service may have billed up to billed + completed
after a stall.

Options:
  --redis <url>   the queue's Redis, redis://host:port (required)
  --queue <name>  the queue (default: ${defaultQueue})
  --json          print one JSON object instead of a table
  -h, --help      show this help

Exit codes: 0 once it printed, 2 on a usage error or a Redis that does not answer, 1 when
Redis fails while it reads.`;

const flags = {
  ...queueFlagTable,
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** Where a fleet's queue stands, as `renderguard status` prints it. */
export interface QueueStatus {
  readonly queue: string;
  /** Jobs by BullMQ state. */
  readonly counts: {
    readonly waiting: number;
    readonly active: number;
    readonly delayed: number;
    readonly prioritized: number;
    readonly completed: number;
    readonly failed: number;
  };
  /**
   * Completed jobs that stalled first (their worker died or lost its lock): what that worker had
   * sent may have been billed as well as the render kept.
   */
  readonly completedAfterStall: number;
  /**
   * Renders billed, one a job: every completed job, and every failed one whose code bills, the
   * jobs `enqueueRenders` removed to add an earlier version again included. A job completed after
   * a stall counts once, though the worker that died on it may have been billed for it too: the
   * service's count may be up to `billed + completedAfterStall`.
   */
  readonly billed: number;
  /** Failed jobs whose billing is unknown, removed ones included. */
  readonly possiblyBilled: number;
  /** Failed jobs by the code their reason starts with; `other` for a reason that starts with none. */
  readonly failures: Readonly<Record<string, number>>;
  readonly paused: boolean;
  /** Why the queue was paused, as a worker logged it on a job; null when no job says. */
  readonly pausedBecause: string | null;
  /** When the queue's rate limit ends, ISO 8601; null when there is none. */
  readonly rateLimitedUntil: string | null;
  /** Why, as the worker that set it said (`code (status): message`: a spent quota, a long `Retry-After`, an open breaker); null when none says. */
  readonly rateLimitedBecause: string | null;
  /** Whether BullMQ ever opened the queue to add jobs or work on it (its meta hash has BullMQ's version): false for a mistyped name. */
  readonly exists: boolean;
}

/** Reads where `queue` stands; `now` (ms since the epoch) dates the end of its rate limit. */
export async function queueStatus(queue: Queue, now: number = Date.now()): Promise<QueueStatus> {
  const counts = await queue.getJobCounts("wait", "active", "delayed", "prioritized", "completed", "failed");
  const failures: Record<string, number> = {};
  let billed = counts.completed ?? 0;
  let possiblyBilled = 0;
  for (const job of await queue.getFailed(0, -1)) {
    const code = failureCode(job.failedReason ?? "");
    failures[code] = (failures[code] ?? 0) + 1;
    const billing = billingOf(code);
    if (billing === true) billed++;
    else if (billing === "unknown") possiblyBilled++;
  }
  const notes = await readQueueNotes(queue);
  // A finished job that enqueueing an earlier version again removed: its billing was noted.
  billed += notes.removedJobs.billed;
  possiblyBilled += notes.removedJobs.possiblyBilled;
  const paused = await queue.isPaused();
  // With no maxJobs, BullMQ gives the counter's TTL whenever a worker took a job in the last second.
  const ttl = await queue.getRateLimitTtl(NO_QUEUE_LIMIT.max);
  return {
    queue: queue.name,
    counts: {
      waiting: counts.wait ?? 0,
      active: counts.active ?? 0,
      delayed: counts.delayed ?? 0,
      prioritized: counts.prioritized ?? 0,
      completed: counts.completed ?? 0,
      failed: counts.failed ?? 0,
    },
    completedAfterStall: notes.completedAfterStall,
    billed,
    possiblyBilled,
    failures,
    paused,
    pausedBecause: paused ? ((await pauseReason(queue)) ?? null) : null,
    rateLimitedUntil: ttl > 0 ? new Date(now + ttl).toISOString() : null,
    rateLimitedBecause: ttl > 0 ? (notes.waitingBecause ?? null) : null,
    exists: (await queue.getVersion()) !== null,
  };
}

/** `status` as a table for people. */
export function statusTable(status: QueueStatus): string {
  const { counts } = status;
  const rows: [string, string][] = [
    ["waiting", String(counts.waiting + counts.prioritized)],
    ["active", String(counts.active)],
    ["delayed (retried later)", String(counts.delayed)],
    ["completed", String(counts.completed)],
    ["completed after a stall (may be billed twice)", String(status.completedAfterStall)],
    ["failed", String(counts.failed)],
    ...Object.entries(status.failures)
      .sort((a, b) => b[1] - a[1])
      .map(([code, count]): [string, string] => [`  ${code}`, `${count}${billingNote(billingOf(code))}`]),
    ["billed", String(status.billed)],
    ["possibly billed", String(status.possiblyBilled)],
    ["paused", status.paused ? `yes: ${status.pausedBecause ?? "no job says why"}` : "no"],
    ["rate-limited until", status.rateLimitedUntil ? `${status.rateLimitedUntil}${status.rateLimitedBecause ? `: ${status.rateLimitedBecause}` : ""}` : "no rate limit"],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  const table = rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join("\n");
  const empty = !status.exists && Object.values(counts).every((count) => count === 0);
  return empty ? `${table}\nno jobs: is the queue name right? (--queue, default ${defaultQueue})` : table;
}

function billingNote(billing: Billed): string {
  if (billing === true) return "  (billed)";
  return billing === "unknown" ? "  (maybe billed)" : "";
}

/** Runs `renderguard status`; resolves with the exit code. */
export async function statusCommand(argv: readonly string[], io: { stdout: NodeJS.WriteStream }): Promise<number> {
  const { values, positionals } = parseFlags(argv, flags);
  if (values.help) {
    io.stdout.write(`${statusUsage}\n`);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const args = queueArgs(values);
  await checkRedis(args.redis);
  const queue = openQueue(args, true);
  try {
    const status = await queueStatus(queue);
    if (values.json) io.stdout.write(`${JSON.stringify(status)}\n`);
    else io.stdout.write(`queue ${args.queue}\n${statusTable(status)}\n`);
    return 0;
  } finally {
    await queue.close();
  }
}
