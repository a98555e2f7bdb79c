import { Redis } from "ioredis";
import { withoutPassword } from "../stores/redis-store.js";
import { SetupError } from "./setup-error.js";

/** How long a fleet command waits for its Redis to answer before it gives up. */
export const REDIS_CHECK_MS = 5_000;

/**
 * Resolves once the Redis at `url` answers a PING; else rejects, within `timeoutMs`, with a
 * SetupError that names Redis, the URL without its password, and the cause. Fleet commands call it
 * first: BullMQ and ioredis would otherwise retry for ever, or fail with a bare socket or parser error.
 */
export async function checkRedis(url: string, timeoutMs: number = REDIS_CHECK_MS): Promise<void> {
  // One try, no reconnecting: the answer is wanted now. disconnectTimeout: not held by a socket that never opened.
  const redis = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: timeoutMs,
    disconnectTimeout: 100,
  });
  // The connection's own error says why (ECONNREFUSED, a parser error from a server that is not Redis).
  let cause: Error | undefined;
  redis.on("error", (error: Error) => (cause ??= error));
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${timeoutMs / 1000} s`)), timeoutMs);
  });
  try {
    await Promise.race([redis.connect().then(() => redis.ping()), timedOut]);
  } catch (error) {
    // ioredis's parser asks to be reported on bytes that are not RESP: a server that is not Redis.
    const why = (cause ?? (error as Error)).message.replace(/\. Please report this\.$/, ": not a Redis server?").replace(/\.$/, "");
    throw new SetupError(`cannot use Redis at ${withoutPassword(url)}: ${why}; nothing was done`);
  } finally {
    clearTimeout(timer);
    redis.disconnect();
  }
}
