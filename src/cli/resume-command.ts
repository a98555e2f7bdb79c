import { Redis } from "ioredis";
import { renderEndpoint } from "../core/endpoint.js";
import { endWait, readQueueNotes } from "../fleet/queue-notes.js";
import { NO_QUEUE_LIMIT } from "../fleet/worker.js";
import { clientKeyPrefix, endSharedStops, stateKeys } from "../stores/redis-store.js";
import { inFlagTerms } from "./batch-command.js";
import { parseFlags, UsageError } from "./flags.js";
import { pauseReason } from "./pause-reason.js";
import { defaultQueue, openQueue, queueArgs, queueFlagTable } from "./queue-flags.js";
import { checkRedis } from "./redis-check.js";

export const resumeUsage = `Usage: renderguard resume --redis <url> [--queue <name>] [--base-url <url>]

Once the cause is fixed, takes back what stopped a fleet's queue, and says why it had stopped:
  - a pause (a rejected key, 401 or 402, a wrong setup): the queue is resumed;
  - a wait of the whole queue (a spent quota, a long Retry-After, an open breaker): it ends;
  - what the workers' limiter keeps in Redis: a spent quota ends, so that the next send is one
    probe that finds out whether renders are back (a quota still spent makes the queue wait
    again, and costs nothing), and the minute's halt after a 401 or 402 ends. This needs the
    service and key the workers use: RENDER_BASE_URL (or --base-url) and RENDER_API_KEY, as
    for renderguard worker.
Running workers take jobs again within 5 s; workers that exited must be started again.

Options:
  --redis <url>     the queue's Redis, redis://host:port (required)
  --queue <name>    the queue (default: ${defaultQueue})
  --base-url <url>  the service the workers use (default: RENDER_BASE_URL)
  -h, --help        show this help

Exit codes: 0 once the queue is neither paused nor waiting (it may have been neither), 2 on a
usage error (a queue that does not exist; a spent quota with no service or key to end it by, or
with one the workers' limiter does not know) or a Redis that does not answer, 1 when Redis fails
while it resumes.`;

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
  // The limiter's state, read and changed as the store does (WATCH, MULTI), on a connection of its own.
  const redis = new Redis(args.redis, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    if ((await queue.getVersion()) === null) {
      throw new UsageError(`no queue ${args.queue} at this Redis: is the name right? (--queue, default ${defaultQueue})`);
    }
    const waitMs = await queue.getRateLimitTtl(NO_QUEUE_LIMIT.max);
    const { waitingBecause } = await readQueueNotes(queue);
    const onQuota = waitMs > 0 && (waitingBecause === undefined || waitingBecause.startsWith("quota_"));
    if (service === undefined && onQuota) {
      throw new UsageError(
        `the queue ${args.queue} waits${waitingBecause ? ` (${waitingBecause})` : ""}: the workers' limiter keeps a spent quota as well, ` +
          "and ending it needs the service and key they use: RENDER_BASE_URL (or --base-url) and RENDER_API_KEY. Nothing was done",
      );
    }
    if (service !== undefined && onQuota && (await redis.exists(service.state)) === 0) {
      throw new UsageError(
        `the workers' limiter keeps nothing for ${service.endpoint} with the key in RENDER_API_KEY at this Redis: ` +
          "are --base-url (or RENDER_BASE_URL) and RENDER_API_KEY the workers'? Nothing was done",
      );
    }
    const done: string[] = [];
    if (await queue.isPaused()) {
      const reason = await pauseReason(queue);
      await queue.resume();
      done.push(`resumed the queue ${args.queue}${reason ? `, paused because ${reason}` : ""}`);
      if (service === undefined) done.push("note: the workers' limiter keeps a halt for a minute after a 401 or 402; with RENDER_BASE_URL and RENDER_API_KEY set, resume ends it too");
    }
    if (waitMs > 0) {
      await endWait(queue);
      done.push(`ended the queue ${args.queue}'s wait${waitingBecause ? `, because ${waitingBecause}` : ""}`);
    }
    if (service !== undefined) done.push(...(await endLimiterStops(redis, service)));
    io.stdout.write(done.length > 0 ? `${done.join("\n")}\n` : `the queue ${args.queue} is neither paused nor waiting: nothing to resume\n`);
    return 0;
  } finally {
    redis.disconnect();
    await queue.close();
  }
}

/** The service the workers use, and where the limiter state they share for it is kept. */
interface Service {
  readonly endpoint: string;
  readonly prefix: string;
  /** The state's key: a state that is not there was never made by a worker with this service and key. */
  readonly state: string;
}

/** The service of a base URL and key, as the workers' client names its limiter state; undefined without both. */
function serviceOf(baseUrl: string | undefined, apiKey: string | undefined): Service | undefined {
  if (!baseUrl || !apiKey) return undefined;
  let endpoint: string;
  try {
    // Nothing is sent: the endpoint only names the state, so http:// to any host is fine here.
    endpoint = renderEndpoint(baseUrl, true);
  } catch (error) {
    throw new UsageError(inFlagTerms((error as Error).message));
  }
  const prefix = clientKeyPrefix(endpoint, apiKey);
  return { endpoint, prefix, state: stateKeys(prefix)[0] };
}

/** Ends the spent quota and the halt the workers' limiter keeps for `service`; a line for each ended. */
async function endLimiterStops(redis: Redis, service: Service): Promise<string[]> {
  const ended = await endSharedStops(redis, service.prefix, Date.now());
  const lines: string[] = [];
  if (ended.quotaUntil !== undefined) {
    lines.push(`ended the quota spent until ${new Date(ended.quotaUntil).toISOString()} for ${service.endpoint}: the next send finds out whether renders are back`);
  }
  if (ended.halt !== undefined) lines.push(`ended the halt for ${service.endpoint}: ${ended.halt.code}${ended.halt.status ? ` (${ended.halt.status})` : ""}`);
  return lines;
}
