import type { Queue } from "bullmq";
import { renderEndpoint } from "../core/endpoint.js";
import { endWait, readQueueNotes } from "../fleet/queue-notes.js";
import { NO_QUEUE_LIMIT } from "../fleet/worker.js";
import { limiterScope } from "../policies/limiter/limiter-store.js";
import { defaultKeyPrefix, stateKeys } from "../stores/redis-store.js";
import { parseFlags, UsageError } from "./flags.js";
import { pauseReason } from "./pause-reason.js";
import { defaultQueue, openQueue, queueArgs, queueFlagTable } from "./queue-flags.js";
import { checkRedis } from "./redis-check.js";

export const resumeUsage = `Usage: renderguard resume --redis <url> [--queue <name>] [--base-url <url>]

Once the cause is fixed, takes back what stopped a fleet's queue, and says why it had stopped:
  - a pause (a rejected key, 401 or 402, a wrong setup): the queue is resumed;
  - a wait of the whole queue (a spent quota, a long Retry-After, an open breaker): it ends;
  - a spent quota the workers' limiter keeps in Redis: forgotten, so that the next send finds
    out whether renders are back (one send; a quota still spent makes the queue wait again, and
    costs nothing). It needs the service and key the workers use: RENDER_BASE_URL (or
    --base-url) and RENDER_API_KEY, as for renderguard worker.
Running workers take jobs again within 5 s; workers that exited must be started again.

Options:
  --redis <url>     the queue's Redis, redis://host:port (required)
  --queue <name>    the queue (default: ${defaultQueue})
  --base-url <url>  the service, to forget its spent quota (default: RENDER_BASE_URL)
  -h, --help        show this help

Exit codes: 0 once the queue is neither paused nor waiting (it may have been neither), 2 on a
usage error (a queue that does not exist; a spent quota with no service or key to forget it by)
or a Redis that does not answer, 1 when Redis fails while it resumes.`;

const flags = { ...queueFlagTable, "base-url": { type: "string" }, help: { type: "boolean", short: "h" } } as const;

/** Runs `renderguard resume`; resolves with the exit code. */
export async function resumeCommand(
  argv: readonly string[],
  io: { stdout: NodeJS.WriteStream },
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const { values, positionals } = parseFlags(argv, flags);
  if (values.help) {
    io.stdout.write(`${resumeUsage}\n`);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const args = queueArgs(values);
  const service = serviceOf(values["base-url"] ?? env.RENDER_BASE_URL, env.RENDER_API_KEY);
  await checkRedis(args.redis);
  // Read-only until it knows the queue exists: a mistyped name must not make one.
  const queue = openQueue(args, true);
  try {
    if ((await queue.getVersion()) === null) {
      throw new UsageError(`no queue ${args.queue} at this Redis: is the name right? (--queue, default ${defaultQueue})`);
    }
    const waitMs = await queue.getRateLimitTtl(NO_QUEUE_LIMIT.max);
    const { waitingBecause } = await readQueueNotes(queue);
    if (service === undefined && waitMs > 0 && (waitingBecause === undefined || waitingBecause.startsWith("quota_"))) {
      throw new UsageError(
        `the queue ${args.queue} waits${waitingBecause ? ` (${waitingBecause})` : ""}: a spent quota is kept by the workers' limiter ` +
          "as well, and forgetting it needs the service and key they use: RENDER_BASE_URL (or --base-url) and RENDER_API_KEY. Nothing was done",
      );
    }
    const done: string[] = [];
    if (await queue.isPaused()) {
      const reason = await pauseReason(queue);
      await queue.resume();
      done.push(`resumed the queue ${args.queue}${reason ? `, paused because ${reason}` : ""}`);
    }
    if (waitMs > 0) {
      await endWait(queue);
      done.push(`ended the queue ${args.queue}'s wait${waitingBecause ? `, because ${waitingBecause}` : ""}`);
    }
    if (service !== undefined) {
      const quotaUntil = await forgetSpentQuota(queue, service);
      if (quotaUntil !== undefined) {
        done.push(`forgot the quota spent until ${new Date(quotaUntil).toISOString()} for ${service.endpoint}: the next send finds out whether renders are back`);
      }
    }
    io.stdout.write(done.length > 0 ? `${done.join("\n")}\n` : `the queue ${args.queue} is neither paused nor waiting: nothing to resume\n`);
    return 0;
  } finally {
    await queue.close();
  }
}

/** The service and key whose limiter state to look at, or undefined without both. */
function serviceOf(baseUrl: string | undefined, apiKey: string | undefined): { endpoint: string; apiKey: string } | undefined {
  if (!baseUrl || !apiKey) return undefined;
  try {
    // Nothing is sent: the endpoint only names the state, so http:// to any host is fine here.
    return { endpoint: renderEndpoint(baseUrl, true), apiKey };
  } catch (error) {
    throw new UsageError((error as Error).message.replace("`baseUrl`", "--base-url (or RENDER_BASE_URL)"));
  }
}

/**
 * Deletes the limiter state the workers share for `service` (`redisStore`'s default keys) if it
 * holds a spent quota, as docs/fleet.md says to do by hand; resolves with when that quota was to
 * end, or undefined. The state is filled again from the next answers.
 */
async function forgetSpentQuota(queue: Queue, service: { endpoint: string; apiKey: string }): Promise<number | undefined> {
  const redis = await queue.getBackend().client;
  const [state] = stateKeys(defaultKeyPrefix(limiterScope(service.endpoint, service.apiKey)));
  const record = await redis.hget(state, "record");
  const quotaUntil = record ? ((JSON.parse(record) as { quotaUntil?: number }).quotaUntil ?? 0) : 0;
  if (quotaUntil <= Date.now()) return undefined;
  await redis.del(state);
  return quotaUntil;
}
