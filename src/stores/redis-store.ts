import { randomInt, randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { ConcurrencyCap } from "../policies/limiter/concurrency-cap.js";
import {
  admit,
  freshRecord,
  grant,
  type HaltRecord,
  type LimiterChange,
  type LimiterRecord,
  type LimiterSnapshot,
  type Observation,
  paceOf,
  type Refusal,
  settle,
  snapshotOf,
  take,
  type Ticket,
} from "../policies/limiter/limiter-state.js";
import { type LimiterStore, limiterScope, type StoreContext } from "../policies/limiter/limiter-store.js";
import { MAX_TIMER_MS } from "../util/clock.js";
import { checkNumber, describe, rejectUnknownKeys } from "../util/options.js";
import { DROP, HALT, HOLD, READ, RENEW, SETTLE, TAKE } from "./redis-scripts.js";

/** Options of `redisStore`: the Redis (`url` or `client`), the keys' prefix and the timings. */
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
/** How soon to ask again while another process's send holds the last renders: its release is not seen here. */
const QUOTA_POLL_MS = 50;
/** How soon a job refused a slot that another job holds while it asks Redis asks again. */
const ASKING_POLL_MS = 5;
/** Decisions made anew on a record another process changed meanwhile, before a send gives up for a moment (an answer never does). */
const MAX_TRIES = 5;
/** How soon a send that lost `MAX_TRIES` races for the record asks again. */
const CONFLICT_POLL_MS = 5;
/** The sends in flight allowed while no count is known: no cap but the processes' own. */
const NO_CAP = 2 ** 31;

type Arg = string | number;
type Conflict = [kind: "conflict", version: number, record: string, inFlight: number, seq: number, countSeq: number];
type TakeReply =
  | [kind: "ok", seq: number, version: number, inFlight: number]
  | [kind: "halt", why: string]
  | [kind: "breaker", until: number]
  | [kind: "full", inFlight: number]
  | [kind: "wait", ms: number, inFlight: number]
  | Conflict;
type SettleReply = [kind: "ok", version: number, inFlight: number, countSeq: number] | [kind: "gone", inFlight: number] | Conflict;

/** The store's scripts, as ioredis commands (`defineCommand`). */
interface Scripts {
  renderguardRead(...args: Arg[]): Promise<[version: number, record: string, inFlight: number, seq: number, countSeq: number]>;
  renderguardTake(...args: Arg[]): Promise<TakeReply>;
  renderguardSettle(...args: Arg[]): Promise<SettleReply>;
  renderguardHold(...args: Arg[]): Promise<number>;
  renderguardHalt(...args: Arg[]): Promise<number>;
  renderguardRenew(...args: Arg[]): Promise<number>;
  renderguardDrop(...args: Arg[]): Promise<number>;
}

/**
 * The limiter's state in Redis (DESIGN §8), so that the processes that share an API key behave as
 * one careful client. Redis keeps primitives only (redis-scripts.ts): one versioned record (the
 * quota, the pause, the send rate's learner: the `LimiterRecord` of limiter-state.ts, as JSON), the
 * sends in flight (leases a live process renews, so a killed one's expire), one GCRA pace, a halt
 * (401, 402) and a process's open circuit breaker. Every decision is the pure TypeScript the memory
 * store runs, applied here to the record last read: a send is admitted on it and taken at its pace
 * if the record has not changed since (compare-and-set, else decided again on the newer one); an
 * answer is settled into a copy of it and written back the same way. What one process learns, every
 * process obeys at its next send. The concurrency cap stays each process's own.
 *
 * If Redis fails or is slow, the process goes on alone, with the same rules on its own copy of the
 * last record it saw (a warning and a `storeDegraded` event), and tries Redis again a second later:
 * no job is lost for Redis.
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

/** The prefix a scope's state is kept under when `keyPrefix` is not given. */
function defaultKeyPrefix(scope: string): string {
  return `renderguard:${scope}`;
}

/** The prefix a client's store keeps its state under when `keyPrefix` is not given, from the client's render endpoint and API key. */
export function clientKeyPrefix(endpoint: string, apiKey: string): string {
  return defaultKeyPrefix(limiterScope(endpoint, apiKey));
}

/** The keys of the state under `prefix`, in one hash slot: the state hash, and the leases. */
export function stateKeys(prefix: string): [state: string, leases: string] {
  return [`{${prefix}}:state`, `{${prefix}}:leases`];
}

/** What `endSharedStops` ended: a spent quota (until when it was to last) and a halt (why). */
export interface EndedStops {
  readonly quotaUntil: number | undefined;
  readonly halt: HaltRecord | undefined;
}

/**
 * Ends what stops every process sharing the state under `prefix` until a time, once its cause is
 * fixed (`renderguard resume`): a spent quota, whose wait ends at `now`, so that the next send is
 * the one probe that finds out whether renders are back; and a halt (401, 402). The record is
 * changed as a process changes it, with its version bumped, so every process reads it again.
 * Resolves with what it ended (nothing, for no state under `prefix`).
 */
export async function endSharedStops(redis: Redis, prefix: string, now: number): Promise<EndedStops> {
  const [state] = stateKeys(prefix);
  for (;;) {
    await redis.watch(state);
    const [json, halt, haltUntil] = await redis.hmget(state, "record", "halt", "haltUntil");
    const record = json ? (JSON.parse(json) as LimiterRecord) : undefined;
    const ended: EndedStops = {
      quotaUntil: record !== undefined && record.quotaUntil > now ? record.quotaUntil : undefined,
      halt: halt && Number(haltUntil) > now ? haltRecord(halt) : undefined,
    };
    if (ended.quotaUntil === undefined && ended.halt === undefined) {
      await redis.unwatch();
      return ended;
    }
    const change = redis.multi();
    if (ended.quotaUntil !== undefined) change.hset(state, "record", JSON.stringify({ ...record, quotaUntil: now })).hincrby(state, "version", 1);
    if (ended.halt !== undefined) change.hdel(state, "halt", "haltUntil");
    // Null when a process wrote the state meanwhile: read it again.
    if ((await change.exec()) !== null) return ended;
  }
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

/** The shared state as of the last reply: a record, its version, and the fleet's sends in flight at that moment. */
interface Shared {
  readonly record: LimiterRecord;
  /** -1 before the first reply: no version matches it. */
  readonly version: number;
  readonly inFlight: number;
}

/** This process on its own, while Redis is away: its copy of the last record, its own pace. */
interface Alone {
  readonly record: LimiterRecord;
  tat: number;
}

class RedisLimiterStore implements LimiterStore {
  private context: StoreContext | undefined;
  /** The state hash and the leases (one hash slot: `{prefix}`). */
  private keys: string[] = [];
  private connection: Promise<Redis & Scripts> | undefined;
  /** The connection this store opened (from a URL), ready or not. */
  private opening: Redis | undefined;
  private cap = new ConcurrencyCap(1);
  /** The version a state made anew starts at: see redis-scripts.ts. */
  private readonly birth = randomInt(1, 2 ** 47);
  private shared: Shared = { record: freshRecord(), version: -1, inFlight: 0 };
  /** The state is as last read or written: a fresh process, or one refused on what it knew, reads it first. */
  private read = false;
  /** The last seq Redis granted: a process alone goes on counting from it. */
  private lastSeq = 0;
  private alone: Alone | undefined;
  /** Sends in flight on a Redis slot, by ticket: their lease ids. */
  private readonly leases = new Map<Ticket, string>();
  /** Slots taken by acquires waiting for Redis's answer. */
  private asking = 0;
  private degraded = false;
  /** Closed with its client: answers still coming count here only. */
  private closed = false;
  /** While degraded: when to try Redis again. */
  private rejoinAt = 0;
  private renewTimer: NodeJS.Timeout | undefined;

  constructor(private readonly setup: StoreSetup) {}

  open(context: StoreContext): void {
    this.context = context;
    this.keys = stateKeys(this.setup.keyPrefix ?? defaultKeyPrefix(context.scope));
    this.cap = new ConcurrencyCap(context.settings.concurrency);
  }

  async acquire(now: number): Promise<Ticket | Refusal> {
    this.opened();
    if (this.cap.full) {
      // A slot held only while Redis is asked may come free with no send to finish and wake the job.
      return { reason: "concurrency", until: this.asking > 0 ? now + ASKING_POLL_MS : undefined };
    }
    this.cap.take();
    this.asking++;
    let answer: Ticket | Refusal;
    try {
      answer = await this.take(now);
    } finally {
      this.asking--;
    }
    if (!("seq" in answer)) this.cap.cancel();
    return answer;
  }

  async release(ticket: Ticket, seen: Observation, now: number): Promise<LimiterChange[]> {
    const { minRate } = this.opened().settings;
    const limit = this.cap.release(seen.effect);
    const changes: LimiterChange[] = limit === undefined ? [] : [{ kind: "concurrency", limit }];
    const leaseId = this.leases.get(ticket);
    this.leases.delete(ticket);
    // Granted while Redis was away: its answer counts in this process's own copy, if it still has one.
    if (leaseId === undefined) return this.alone ? [...changes, ...settle(this.alone.record, ticket, seen, now, minRate)] : changes;
    // Until it is written, however many races for the record it loses: each one lost is another
    // answer written. Its lease goes only with its answer written: a slot given back with its answer
    // unrecorded is a render the fleet counts neither in flight nor in the renders left, and sends one
    // too many at the end of a quota.
    for (;;) {
      const { record, version } = this.shared;
      const next = structuredClone(record);
      const made = settle(next, ticket, seen, now, minRate);
      // A new count in force: Redis stamps it with the sends granted as it is written (redis-scripts.ts).
      const counted = next.remaining !== record.remaining || next.remainingSeq !== record.remainingSeq ? 1 : 0;
      // Tried even while degraded: the fleet's record and the lease are worth a try.
      const reply = await this.call(
        (redis) => redis.renderguardSettle(...this.keys, now, leaseId, version, JSON.stringify(next), this.birth, TTL_MS, counted),
        { always: true },
      );
      if (!reply) return [...changes, ...settle(this.goneAlone().record, ticket, seen, now, minRate)];
      if (reply[0] === "ok") {
        this.shared = { record: { ...next, countSeq: reply[3] }, version: reply[1], inFlight: reply[2] };
        return [...changes, ...made];
      }
      if (reply[0] === "gone") return changes; // its lease ran out, or Redis lost the state: the record no longer counts it
      this.adopt(reply);
    }
  }

  snapshot(now: number): LimiterSnapshot {
    this.opened();
    if (this.degraded && this.alone) return snapshotOf(this.alone.record, now, this.cap.inFlight, this.cap.limit);
    // The renders left net of the fleet's sends in flight; the sends in flight this process's own.
    return { ...snapshotOf(this.shared.record, now, this.shared.inFlight, this.cap.limit), inFlight: this.cap.inFlight };
  }

  async breakerOpened(until: number): Promise<void> {
    const now = this.opened().clock.now();
    await this.call((redis) => redis.renderguardHold(...this.keys, now, until, TTL_MS));
  }

  async halt(why: HaltRecord): Promise<void> {
    const now = this.opened().clock.now();
    await this.call((redis) => redis.renderguardHalt(...this.keys, now, JSON.stringify(why), now + HALT_MS, TTL_MS), { always: true });
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

  private opened(): StoreContext {
    if (!this.context) throw new Error("The Redis store is used before a limiter opened it.");
    return this.context;
  }

  /**
   * Decides on the record last read and takes the slot in Redis if the record is still that one;
   * on a newer record, decides again. A send is admitted on the fleet's sends in flight, as of the
   * same reply as the record, and paced at the record's rate.
   */
  private async take(now: number): Promise<Ticket | Refusal> {
    // Whether the record decided on is as Redis had it during this call: a refusal made on an
    // older one is checked first (another process's release is not seen here, nor its refill).
    let fresh = false;
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      if (!this.read) {
        const reply = await this.call((redis) => redis.renderguardRead(...this.keys, now, this.birth, TTL_MS));
        if (!reply) return this.takeAlone(now);
        this.adopt(["conflict", ...reply]);
        this.read = fresh = true;
      }
      const { record, version, inFlight } = this.shared;
      // The probe's lease gone with no answer (its process killed, its grant come too late): it is
      // no longer in flight, so the next probe may go. The probe holds its lease from the moment it
      // is recorded to the moment its answer is, so with none in flight it cannot still be out.
      const view = record.probing && inFlight === 0 ? { ...record, probing: false } : record;
      const admitted = admit(view, now, inFlight);
      if ("reason" in admitted) {
        if (fresh) return admitted.reason === "quota" && admitted.until === undefined ? { reason: "quota", until: now + QUOTA_POLL_MS } : admitted;
        this.read = false; // decided on an older record: read it again, and decide again
        continue;
      }
      let written: LimiterRecord | undefined;
      if (admitted.probe) grant((written = structuredClone(view)), true, now);
      const rate = paceOf(view);
      const leaseId = randomUUID();
      const args = [now, leaseId, now + this.setup.leaseMs, version, admitted.probe ? 1 : (view.remaining ?? NO_CAP)];
      const reply = await this.call(
        (redis) => redis.renderguardTake(...this.keys, ...args, Number.isFinite(rate) ? rate : 0, written ? JSON.stringify(written) : "", this.birth, TTL_MS),
        // A grant that came after its time-out: nobody sends on it.
        { late: ([kind]) => kind === "ok" && void this.dropLeases([leaseId]) },
      );
      if (!reply) return this.takeAlone(now);
      fresh = true;
      switch (reply[0]) {
        case "ok": {
          const [, seq, newVersion, fleetInFlight] = reply;
          this.shared = { record: written ?? record, version: newVersion, inFlight: fleetInFlight };
          this.lastSeq = seq;
          const ticket: Ticket = { seq, probe: admitted.probe, sentAt: now };
          this.leases.set(ticket, leaseId);
          this.renewLeases();
          return ticket;
        }
        case "halt":
          return { reason: "halt", until: undefined, halt: haltRecord(reply[1]) };
        case "breaker":
          return { reason: "breaker", until: reply[1] };
        case "wait":
          this.shared = { record, version, inFlight: reply[2] };
          return { reason: "rate", until: now + reply[1] };
        case "full":
          this.shared = { record, version, inFlight: reply[1] };
          break;
        case "conflict":
          this.adopt(reply);
          break;
      }
    }
    return { reason: "rate", until: now + CONFLICT_POLL_MS };
  }

  /** Takes the record, version and in-flight count another process left (`record` '' for none yet). */
  private adopt([, version, json, inFlight, seq, countSeq]: Conflict): void {
    const record = json === "" ? freshRecord() : (JSON.parse(json) as LimiterRecord);
    // The fleet's count of sends, and the stamp of the count in force, are Redis's (the record's own are its writer's view).
    record.seq = seq;
    record.countSeq = countSeq;
    this.shared = { record, version, inFlight };
    this.lastSeq = seq;
  }

  /** A send decided by this process alone, while Redis is away: the memory store's steps on its own copy. */
  private takeAlone(now: number): Ticket | Refusal {
    const alone = this.goneAlone();
    return take(alone.record, alone, now, this.cap.inFlight - 1); // less its own slot, taken already
  }

  /** This process's own state while Redis is away: made at the first need from the last record it saw. */
  private goneAlone(): Alone {
    if (!this.alone) {
      const record = structuredClone(this.shared.record);
      // Its grants go on from the fleet's count; its own pace starts now.
      record.seq = Math.max(record.seq, this.lastSeq);
      this.alone = { record, tat: 0 };
    }
    return this.alone;
  }

  /** Gives back leases at once (a grant that came too late, or close()). */
  private async dropLeases(leaseIds: string[]): Promise<void> {
    const now = this.opened().clock.now();
    await this.call((redis) => redis.renderguardDrop(...this.keys, now, ...leaseIds), { always: true });
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
      const now = this.opened().clock.now();
      void this.call((redis) => redis.renderguardRenew(...this.keys, now, now + this.setup.leaseMs, ...this.leases.values()), { always: true });
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
    const { clock, logger, degraded } = this.opened();
    if (this.closed || (!always && this.degraded && clock.now() < this.rejoinAt)) return undefined;
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
        // Back: the fleet's record again. The next degradation copies the newest one.
        this.degraded = false;
        this.alone = undefined;
        logger.info({}, "The limiter's Redis store answers again: this process shares its state again.");
      }
      return result;
    } catch (error) {
      this.rejoinAt = clock.now() + REJOIN_MS;
      if (!this.degraded) {
        this.degraded = true;
        // ioredis says a call failed on a lost connection in its own terms (an option of its own, at 0).
        const lost = error instanceof Error && error.name === "MaxRetriesPerRequestError";
        const message = lost ? "the connection to Redis was lost" : (error instanceof Error ? error.message : String(error)).replace(/\.$/, "");
        const cause = new Error(`The limiter's Redis store failed (${this.setup.where}): ${message}`, { cause: error });
        logger.warn({ err: cause }, "The limiter's Redis store failed: this process limits its sends on its own until Redis answers.");
        degraded({ error: cause });
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
      for (const [name, lua] of Object.entries(SCRIPTS)) redis.defineCommand(name, { numberOfKeys: 2, lua });
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
  renderguardRead: READ,
  renderguardTake: TAKE,
  renderguardSettle: SETTLE,
  renderguardHold: HOLD,
  renderguardHalt: HALT,
  renderguardRenew: RENEW,
  renderguardDrop: DROP,
};

/** The halt another process recorded; a record that is not one still halts, with what it holds. */
function haltRecord(value: string): HaltRecord {
  try {
    const record = JSON.parse(value) as Partial<HaltRecord>;
    if (typeof record.code === "string" && typeof record.message === "string") {
      return { code: record.code, message: record.message, status: record.status };
    }
  } catch {
    // not JSON: below
  }
  return { code: "invalid_api_key", message: `Another process halted the limiter's shared state: ${value.slice(0, 200)}`, status: undefined };
}
