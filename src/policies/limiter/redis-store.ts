import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { MAX_TIMER_MS } from "../../clock.js";
import { checkNumber, describe, rejectUnknownKeys } from "../../options.js";
import { ConcurrencyCap } from "./concurrency-cap.js";
import { FleetShare } from "./fleet-share.js";
import {
  type HaltRecord,
  type LimiterChange,
  type LimiterSnapshot,
  LimiterState,
  type Observation,
  type Refusal,
  rateChange,
  type Ticket,
} from "./limiter-state.js";
import type { LimiterStore, StoreContext } from "./limiter-store.js";
import { ACQUIRE, DROP, HALT, HOLD, RELEASE, RENEW } from "./redis-scripts.js";
import { SendRate } from "./send-rate.js";

export interface RedisStoreOptions {
  /**
   * A Redis server's URL (`redis://127.0.0.1:6379/0`): the store opens its own connection, and
   * `client.close()` closes it. Needs the `ioredis` package. Give `url` or `client`, not both.
   */
  readonly url?: string;
  /**
   * An ioredis client of yours: you close it. The store adds its scripts to it as commands whose
   * names begin with `renderguard`.
   */
  readonly client?: Redis;
  /**
   * The start of the store's keys: processes whose stores share it share one quota, one rate limit
   * and one halt. By default, one per service URL and API key (`renderguard:` and a hash of the two).
   *
   * @default "renderguard:<hash of baseUrl and apiKey>"
   */
  readonly keyPrefix?: string;
  /**
   * Milliseconds a send's slot stays taken after its process stops renewing it (killed mid-request).
   * A live process renews its slots every third of this.
   *
   * @default 10_000
   */
  readonly leaseMs?: number;
  /**
   * Milliseconds a Redis call may take. A slower or failed call makes this process limit its
   * sends on its own state (a warning and a `storeDegraded` event) and try Redis again a second later.
   *
   * @default 500
   */
  readonly timeoutMs?: number;
}

const defaults = { leaseMs: 10_000, timeoutMs: 500 };
/** Keys live this long after their last change. */
const TTL_MS = 24 * 60 * 60 * 1000;
/**
 * How long one process's 401 or 402 halts every process sharing the store: long enough to stop a
 * fleet, short enough that a key topped up or replaced works again without clearing Redis.
 */
const HALT_MS = 60_000;
/** How long a degraded store works on its own before it tries Redis again. */
const REJOIN_MS = 1_000;
/** How soon to ask again while another process's send holds the last renders. */
const QUOTA_POLL_MS = 50;
/** How soon a job refused a slot that another job holds while it asks Redis asks again. */
const ASKING_POLL_MS = 5;

type Reply = [kind: string, value: string | number, news: StreamEntry[], previousGrant?: string | number];
type StreamEntry = [id: string, fields: string[]];

/** The store's scripts, as ioredis commands (`defineCommand`). */
interface Scripts {
  renderguardAcquire(...args: (string | number)[]): Promise<Reply>;
  renderguardRelease(...args: (string | number)[]): Promise<[exhausted: number, remaining: string, inFlight: number, news: StreamEntry[]]>;
  renderguardHold(...args: (string | number)[]): Promise<number>;
  renderguardHalt(...args: (string | number)[]): Promise<number>;
  renderguardRenew(...args: (string | number)[]): Promise<number>;
  renderguardDrop(...args: (string | number)[]): Promise<number>;
}

/**
 * The limiter's state in Redis (DESIGN §8), so that the processes that share an API key behave as
 * one careful client. Shared, each change one Lua script: the renders remaining and the send that
 * told them, the sends in flight (leases a live process renews, so a killed one's expire), the one
 * probe after the quota ran out, a pause, a halt (401, 402), a process's open circuit breaker (the
 * fleet backs off a failing service together), and the send rate: one GCRA token
 * take per send, at the rate every process learns from the answers of all (each 429 and accepted
 * send goes into a stream that every process's learner reads in the same order). The concurrency
 * cap stays each process's own.
 *
 * If Redis fails or is slow, the process goes on with its own state (a warning and a
 * `storeDegraded` event) and tries Redis again a second later: no job is lost for Redis.
 */
export function redisStore(options: RedisStoreOptions): LimiterStore {
  if (typeof options !== "object" || options === null) throw new TypeError("Expected `redisStore` options, an object.");
  rejectUnknownKeys("redisStore", options, ["url", "client", "keyPrefix", "leaseMs", "timeoutMs"]);
  const { url, client } = options;
  if ((url === undefined) === (client === undefined)) {
    throw new TypeError("Expected `redisStore` to be given either `url` (a redis:// URL) or `client` (an ioredis instance).");
  }
  if (url !== undefined && !isRedisUrl(url)) {
    throw new TypeError(`Expected \`redisStore\` \`url\` to be a redis:// or rediss:// URL, got ${withoutPassword(url)}.`);
  }
  if (client !== undefined && typeof (client as Partial<Redis> | null)?.defineCommand !== "function") {
    throw new TypeError("Expected `redisStore` `client` to be an ioredis instance (`new Redis(...)`), got something without `defineCommand`.");
  }
  const { keyPrefix } = options;
  if (keyPrefix !== undefined && (typeof keyPrefix !== "string" || keyPrefix === "")) {
    throw new TypeError("Expected `redisStore` `keyPrefix` to be a non-empty string.");
  }
  // Each is a timer's delay (a lease renews every third of its own): one setTimeout must hold it.
  for (const name of ["leaseMs", "timeoutMs"] as const) {
    if (options[name] !== undefined) checkNumber(`redisStore.${name}`, options[name], { positive: true, max: MAX_TIMER_MS });
  }
  return new RedisLimiterStore({
    connect: client ? async () => client : (opened) => openConnection(url as string, opened),
    where: url === undefined ? "your ioredis client's Redis" : `Redis at ${redisAddress(url)}`,
    keyPrefix,
    leaseMs: options.leaseMs ?? defaults.leaseMs,
    timeoutMs: options.timeoutMs ?? defaults.timeoutMs,
  });
}

/** True for a URL a Redis connection can be opened from: `redis://` or `rediss://`, well formed. */
export function isRedisUrl(value: unknown): value is string {
  if (typeof value !== "string" || !URL.canParse(value)) return false;
  const { protocol } = new URL(value);
  return protocol === "redis:" || protocol === "rediss:";
}

/** Opens a connection to `url`; `opened` is told of it at once, before it is ready. */
async function openConnection(url: string, opened: (redis: Redis) => void): Promise<Redis> {
  const { Redis } = await import("ioredis");
  // Fail at once while disconnected (the store then works on its own state) rather than queue.
  // A socket that never opened is not waited for on disconnect (ioredis would hold the process 2 s).
  const redis = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, disconnectTimeout: 100 });
  opened(redis);
  // Reported by the calls that fail; the last one says why a connection failed (a wrong password).
  let lastError: Error | undefined;
  redis.on("error", (error: Error) => (lastError = error));
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect(); // no reconnecting in the background: the next call opens a new connection
    const why = lastError ?? (error as Error);
    throw new Error(`Could not connect to Redis at ${redisAddress(url)} (${why.message.replace(/\.$/, "")})`, { cause: why });
  }
  return redis;
}

/** A value given as a URL, for a message: its password, if it has one, hidden. */
export function withoutPassword(value: unknown): string {
  const url = typeof value === "string" && URL.canParse(value) ? new URL(value) : undefined;
  // Only a URL of a scheme meant here is shown: anything else may be the API key given in its place.
  if (!url || !/^(?:rediss?|https?):$/.test(url.protocol)) return describe(value);
  if (!url.password) return JSON.stringify(value);
  url.password = "***";
  return JSON.stringify(url.href);
}

/** `host:port` of a Redis URL: never its password. */
function redisAddress(url: string): string {
  const { hostname, port } = new URL(url);
  return `${hostname}:${port || 6379}`;
}

interface StoreSetup {
  /** The connection, ready; an opened one is told to `opened` at once, so that close() can end it. */
  readonly connect: (opened: (redis: Redis) => void) => Promise<Redis>;
  /** Which Redis, for messages: `Redis at host:port`. */
  readonly where: string;
  readonly keyPrefix: string | undefined;
  readonly leaseMs: number;
  readonly timeoutMs: number;
}

class RedisLimiterStore implements LimiterStore {
  /** Names this store among those sharing the keys: the fleet's pace knows which process set it. */
  private readonly id = randomUUID();
  private context: StoreContext | undefined;
  /** The state hash, the leases, the answers stream (one hash slot: `{prefix}`). */
  private keys: string[] = [];
  private connection: Promise<Redis & Scripts> | undefined;
  /** The connection this store opened (from a URL), ready or not. */
  private opening: Redis | undefined;
  private cap = new ConcurrencyCap(1);
  private sendRate: SendRate | undefined;
  /** This process's part of the fleet's sends: its pace while Redis is away. */
  private readonly grants = new FleetShare();
  /** This process's own state, while Redis cannot be reached. */
  private local: LimiterState | undefined;
  /** Sends in flight on a Redis slot, by ticket: their lease ids. */
  private readonly leases = new Map<Ticket, string>();
  /** The last answer learned: a new process learns from the fleet's last two seconds of answers, not a day's. */
  private lastAnswer = `${Date.now() - 2_000}-0`;
  /** Changes learned while taking a slot, reported with the next release. */
  private pending: LimiterChange[] = [];
  /** Slots taken by acquires waiting for Redis's answer. */
  private asking = 0;
  private degraded = false;
  /** Closed with its client: answers still coming count here only. */
  private closed = false;
  /** While degraded: when to try Redis again. */
  private rejoinAt = 0;
  private renewTimer: NodeJS.Timeout | undefined;
  private shared: { remaining: number | undefined; inFlight: number; pausedUntil: number | undefined } = {
    remaining: undefined,
    inFlight: 0,
    pausedUntil: undefined,
  };

  constructor(private readonly setup: StoreSetup) {}

  open(context: StoreContext): void {
    this.context = context;
    const prefix = this.setup.keyPrefix ?? `renderguard:${context.scope}`;
    this.keys = ["state", "leases", "answers"].map((name) => `{${prefix}}:${name}`);
    this.cap = new ConcurrencyCap(context.settings.concurrency);
    this.sendRate = new SendRate(context.settings);
    // Its own concurrency cap is this store's: the local state limits the rest. It paces by the
    // learner the fleet's answers teach, so a worker on its own goes on from the rate the fleet
    // learned instead of meeting the limit anew from nothing, at its part of it: every process
    // of the fleet on its own at once, each at the whole, would send the service a multiple.
    this.local = new LimiterState({ ...context.settings, concurrency: Number.MAX_SAFE_INTEGER }, this.sendRate, () =>
      this.grants.share(),
    );
  }

  async acquire(now: number): Promise<Ticket | Refusal> {
    const { local, sendRate } = this.opened();
    if (this.cap.full) {
      // A slot held only while Redis is asked may come free with no send to finish and wake the job.
      return { reason: "concurrency", until: this.asking > 0 ? now + ASKING_POLL_MS : undefined };
    }
    this.cap.take();
    this.asking++;
    const leaseId = randomUUID();
    const rate = sendRate.paceAt(now);
    const args = [now, leaseId, now + this.setup.leaseMs, Number.isFinite(rate) ? rate : 0, TTL_MS, this.lastAnswer, this.id];
    const reply = await this.call((redis) => redis.renderguardAcquire(...this.keys, ...args), {
      late: ([kind]) => {
        if (kind === "ok" || kind === "probe") void this.dropLeases([leaseId]);
      },
    });
    this.asking--;
    const answer = reply ? this.granted(reply, now, leaseId) : local.acquire(now);
    if (!("seq" in answer)) this.cap.cancel();
    return answer;
  }

  async release(ticket: Ticket, seen: Observation, now: number): Promise<LimiterChange[]> {
    const { local } = this.opened();
    const changes = this.pending;
    this.pending = [];
    const limit = this.cap.release(seen.effect);
    if (limit !== undefined) changes.push({ kind: "concurrency", limit });
    const leaseId = this.leases.get(ticket);
    this.leases.delete(ticket);
    if (leaseId === undefined) {
      // Granted while Redis was away: its answer counts here only.
      changes.push(...local.release(ticket, seen, now).filter((change) => change.kind !== "concurrency"));
      return changes;
    }
    const optional = (value: number | undefined) => (value === undefined ? "" : value);
    const args = [
      now,
      leaseId,
      ticket.seq,
      ticket.probe ? 1 : 0,
      seen.effect,
      optional(seen.remaining),
      optional(seen.retryAt),
      ticket.sentAt,
      seen.resend ? 1 : 0,
      TTL_MS,
      this.lastAnswer,
    ];
    // Tried even while degraded: the fleet's count and its lease are worth a try.
    const reply = await this.call((redis) => redis.renderguardRelease(...this.keys, ...args), { always: true });
    if (!reply) return changes; // its lease expires on its own
    const [exhausted, remaining, inFlight, news] = reply;
    this.shared = { ...this.shared, remaining: remaining === "" ? undefined : Number(remaining), inFlight };
    if (exhausted === 1) changes.push({ kind: "quota_exhausted", until: seen.retryAt });
    changes.push(...(await this.learn(news)));
    return changes;
  }

  snapshot(now: number): LimiterSnapshot {
    const { local, sendRate } = this.opened();
    if (this.degraded) return { ...local.snapshot(now), inFlight: this.cap.inFlight, concurrency: this.cap.limit };
    const rate = sendRate.rateAt(now);
    const { remaining, inFlight, pausedUntil } = this.shared;
    return {
      inFlight: this.cap.inFlight,
      remaining: remaining === undefined ? undefined : Math.max(0, remaining - inFlight),
      sendRate: Number.isFinite(rate) ? rate : undefined,
      concurrency: this.cap.limit,
      pausedUntil: pausedUntil !== undefined && now < pausedUntil ? pausedUntil : undefined,
    };
  }

  async breakerOpened(until: number): Promise<void> {
    await this.call((redis) => redis.renderguardHold(...this.keys, "breakerUntil", until, TTL_MS));
  }

  async halt(why: HaltRecord): Promise<void> {
    const now = Date.now();
    await this.call((redis) => redis.renderguardHalt(...this.keys, JSON.stringify(why), now + HALT_MS, now, TTL_MS), { always: true });
  }

  async close(): Promise<void> {
    clearInterval(this.renewTimer);
    // The sends still in flight are being aborted: their slots go back now, not a lease later.
    if (this.leases.size > 0) await this.dropLeases([...this.leases.values()]);
    this.closed = true;
    const connection = this.connection;
    this.connection = undefined;
    const redis = this.opening;
    this.opening = undefined;
    if (!connection || !redis) return;
    // Ready, it says goodbye; still connecting (a Redis that does not answer), it is cut off.
    if (redis.status === "ready") await redis.quit().catch(() => redis.disconnect());
    else redis.disconnect();
  }

  private opened(): { local: LimiterState; sendRate: SendRate } {
    if (!this.local || !this.sendRate) throw new Error("The Redis store is used before a limiter opened it.");
    return { local: this.local, sendRate: this.sendRate };
  }

  /** What a reply to `renderguardAcquire` grants, and what its news teach. */
  private granted([kind, value, news, previousGrant]: Reply, now: number, leaseId: string): Ticket | Refusal {
    void this.learn(news).then((changes) => this.pending.push(...changes));
    switch (kind) {
      case "ok":
      case "probe": {
        const ticket: Ticket = { seq: Number(value), probe: kind === "probe", sentAt: now };
        this.leases.set(ticket, leaseId);
        this.grants.granted(now, ticket.seq);
        // The learner times the fleet's goodput from when the fleet's sends began, not this process's:
        // a gap between this process's own sends is no pause while the others sent.
        const { sendRate } = this.opened();
        if (previousGrant !== undefined && previousGrant !== "") sendRate.sent(Number(previousGrant));
        sendRate.sent(now);
        this.renewLeases();
        return ticket;
      }
      case "halt":
        return { reason: "halt", until: undefined, halt: haltRecord(value) };
      case "pause":
        this.shared = { ...this.shared, pausedUntil: Number(value) };
        return { reason: "pause", until: Number(value) };
      case "breaker":
        return { reason: "breaker", until: Number(value) };
      case "quota":
        return { reason: "quota", until: Number(value) < 0 ? now + QUOTA_POLL_MS : Number(value) };
      default:
        return { reason: "rate", until: Number(value) };
    }
  }

  /**
   * Feeds the learner the answers every process gave the stream since this one last looked, in
   * the stream's order (so every process's learner learns the same). A pause it learns is shared.
   */
  private async learn(news: StreamEntry[]): Promise<LimiterChange[]> {
    const { sendRate } = this.opened();
    const changes: LimiterChange[] = [];
    for (const [id, list] of news) {
      // Two calls in flight at once are told the same answers: each is learned once.
      if (!isAfter(id, this.lastAnswer)) continue;
      this.lastAnswer = id;
      const fields = Object.fromEntries(list.flatMap((value, i) => (i % 2 ? [] : [[value, list[i + 1]]])));
      const at = Number(fields.t);
      const sentAt = Number(fields.s);
      const resend = fields.r === "1";
      const verdict = fields.l === "1" ? sendRate.limit(at, sentAt, resend) : sendRate.accept(at, sentAt, resend);
      const change = rateChange(verdict, fields.a ? Number(fields.a) : undefined);
      if (change) changes.push(change);
    }
    for (const change of changes) {
      if (change.kind !== "paused") continue;
      this.shared = { ...this.shared, pausedUntil: Math.max(this.shared.pausedUntil ?? 0, change.until) };
      await this.call((redis) => redis.renderguardHold(...this.keys, "pauseUntil", change.until, TTL_MS));
    }
    return changes;
  }

  /** Gives back leases at once (a grant that came too late, or close()), and the probe if one is it. */
  private async dropLeases(leaseIds: string[]): Promise<void> {
    await this.call((redis) => redis.renderguardDrop(...this.keys, ...leaseIds), { always: true });
  }

  /** Renews the leases of this process's sends in flight, every third of a lease, while any are. */
  private renewLeases(): void {
    if (this.renewTimer) return;
    this.renewTimer = setInterval(() => {
      if (this.leases.size === 0) {
        clearInterval(this.renewTimer);
        this.renewTimer = undefined;
        return;
      }
      const expiry = Date.now() + this.setup.leaseMs;
      void this.call((redis) => redis.renderguardRenew(...this.keys, expiry, ...this.leases.values()), { always: true });
    }, this.setup.leaseMs / 3);
    this.renewTimer.unref();
  }

  /**
   * Runs one Redis call within `timeoutMs`. A failure or time-out degrades the store (resolves
   * undefined): this process goes on with its own state, and tries Redis again `REJOIN_MS` later.
   */
  private async call<T>(
    run: (redis: Redis & Scripts) => Promise<T>,
    { always = false, late }: { always?: boolean; late?: (result: T) => void } = {},
  ): Promise<T | undefined> {
    if (this.closed || (!always && this.degraded && Date.now() < this.rejoinAt)) return undefined;
    let timer: NodeJS.Timeout | undefined;
    let verdict: NodeJS.Immediate | undefined;
    let timedOut = false;
    const running = this.redis().then(run);
    // A script that answers after its time-out still ran: `late` undoes what it did.
    running.then((result) => timedOut && late?.(result)).catch(() => {});
    try {
      const result = await Promise.race([
        running,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            // After this process was busy past the time-out (a long task, a starved CPU), its timers
            // run before it reads the replies that came meanwhile: the verdict waits for that read.
            verdict = setImmediate(() => {
              timedOut = true;
              reject(new Error(`Redis did not answer within ${this.setup.timeoutMs} ms.`));
            });
          }, this.setup.timeoutMs);
        }),
      ]);
      if (this.degraded) {
        this.degraded = false;
        this.context?.logger.info({}, "The limiter's Redis store answers again: this process shares its state again.");
      }
      return result;
    } catch (error) {
      this.rejoinAt = Date.now() + REJOIN_MS;
      if (!this.degraded) {
        this.degraded = true;
        // ioredis says a call failed on a lost connection in its own terms (an option of its own, at 0).
        const lost = error instanceof Error && error.name === "MaxRetriesPerRequestError";
        const message = lost ? "the connection to Redis was lost" : (error instanceof Error ? error.message : String(error)).replace(/\.$/, "");
        const cause = new Error(`The limiter's Redis store failed (${this.setup.where}): ${message}`, { cause: error });
        this.context?.logger.warn({ err: cause }, "The limiter's Redis store failed: this process limits its sends on its own until Redis answers.");
        this.context?.degraded({ error: cause });
      }
      return undefined;
    } finally {
      clearTimeout(timer);
      clearImmediate(verdict);
    }
  }

  /** The connection, opened at first use, with the store's scripts defined on it. */
  private redis(): Promise<Redis & Scripts> {
    if (this.connection) return this.connection;
    const connection = this.setup.connect((redis) => (this.opening = redis)).then((redis) => {
      for (const [name, lua] of Object.entries(SCRIPTS)) redis.defineCommand(name, { numberOfKeys: 3, lua });
      return redis as Redis & Scripts;
    });
    // A connection that failed to open is tried again next time.
    connection.catch(() => {
      if (this.connection === connection) this.connection = undefined;
    });
    this.connection = connection;
    return connection;
  }
}

const SCRIPTS: Record<keyof Scripts, string> = {
  renderguardAcquire: ACQUIRE,
  renderguardRelease: RELEASE,
  renderguardHold: HOLD,
  renderguardHalt: HALT,
  renderguardRenew: RENEW,
  renderguardDrop: DROP,
};

/** True when stream id `id` (`<ms>-<seq>`) comes after `last`. */
function isAfter(id: string, last: string): boolean {
  const [ms, seq] = id.split("-").map(Number) as [number, number];
  const [lastMs, lastSeq] = last.split("-").map(Number) as [number, number];
  return ms > lastMs || (ms === lastMs && seq > lastSeq);
}

/** The halt another process recorded; a record that is not one still halts, with what it holds. */
function haltRecord(value: string | number): HaltRecord {
  try {
    const record = JSON.parse(String(value)) as Partial<HaltRecord>;
    if (typeof record.code === "string" && typeof record.message === "string") {
      return { code: record.code, message: record.message, status: record.status };
    }
  } catch {
    // not JSON: below
  }
  return { code: "invalid_api_key", message: `Another process halted the limiter's shared state: ${String(value).slice(0, 200)}`, status: undefined };
}
