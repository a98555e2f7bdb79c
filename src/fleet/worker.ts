import { mkdirSync } from "node:fs";
import { type Job, Queue, type RedisOptions, UnrecoverableError, Worker, type WorkerOptions } from "bullmq";
import { Redis, type RedisOptions as IoredisOptions } from "ioredis";
import { isSafeId } from "../batch/file-name.js";
import type { BatchJob } from "../batch/render-many.js";
import { createRenderClient, type RenderClient, type RenderClientOptions } from "../client.js";
import { isRenderError, type RenderError } from "../core/errors.js";
import { redisStore } from "../stores/redis-store.js";
import { systemClock } from "../util/clock.js";
import { checkNumber, describe, rejectUnknownKeys } from "../util/options.js";
import { fleetAction } from "./outcomes.js";
import { folderOutput, functionOutput, type Output, type OutputFunction, type RenderedRecord, sha256Of } from "./output.js";
import { noteCompletedAfterStall, noteWait } from "./queue-notes.js";

/** A job's data: the document (`{ id, html, …request fields }`), and its render once stored. */
export type RenderJobData = BatchJob & {
  /** Set by the worker the moment the bytes are stored; reserved, never part of the request. */
  readonly rendered?: RenderedRecord;
};

/** A completed job's result. */
export interface RenderJobResult {
  /** Where the bytes went: the file, or what the output function returned. */
  readonly path: string | undefined;
  readonly billed: true;
  /** Sends this run took; 0 when an earlier run had rendered and stored it (a stalled job's retry). */
  readonly attempts: number;
}

/** Options of `createRenderWorker`. */
export interface RenderWorkerOptions {
  /** The BullMQ queue's name. */
  readonly queue: string;
  /**
   * The Redis of the queue, and of the limiter's shared state: a `redis://` URL or ioredis options.
   * Every worker on it shares one quota, one send rate, one breaker state and one halt.
   */
  readonly connection: string | RedisOptions;
  /**
   * A client of yours, which you close. Give `client` or `clientOptions`. Its limiter is shared with
   * other workers only if you gave it a shared store (`redisStore`).
   */
  readonly client?: RenderClient;
  /**
   * Options of the client the worker makes, and closes with it. Unless they name a `limiter.store`,
   * its limiter keeps its state in `redisStore` on `connection`.
   */
  readonly clientOptions?: RenderClientOptions;
  /**
   * Where documents go: a folder (created if missing; `<id>.pdf`, written to a temporary file and
   * renamed), or a function that stores them and resolves with where they went.
   */
  readonly output: string | OutputFunction;
  /**
   * Jobs this worker renders at once.
   *
   * @default the client's `limiter.concurrency` (4)
   */
  readonly concurrency?: number;
  /**
   * Sends again a job whose render may have been billed with no document left (billing unknown,
   * such as `response_lost`, or bytes the output could not store), through BullMQ's attempts: it
   * may be billed twice.
   *
   * @default false
   */
  readonly resendUnknown?: boolean;
  /**
   * How long a job's lock lasts, in ms; the worker renews it while the job runs. A worker that died
   * holds its jobs until the lock lapses: together with `stalledInterval`, how soon another worker
   * takes them. BullMQ's `lockDuration`.
   *
   * @default 30_000
   */
  readonly lockDuration?: number;
  /**
   * How often the worker looks for jobs whose lock lapsed (a dead worker's) and returns them to wait,
   * in ms. BullMQ's `stalledInterval`.
   *
   * @default 30_000
   */
  readonly stalledInterval?: number;
}

const workerOptionKeys = Object.keys({
  queue: true,
  connection: true,
  client: true,
  clientOptions: true,
  output: true,
  concurrency: true,
  resendUnknown: true,
  lockDuration: true,
  stalledInterval: true,
} satisfies Record<keyof RenderWorkerOptions, true>);

/**
 * BullMQ reads the queue's rate limit (`queue.rateLimit`) only for a worker that has a limiter of
 * its own; this one never holds a job back by itself (2^31 jobs a second): renderguard's limiter
 * sets the pace. Its counter reaches `max` only when `queue.rateLimit` sets it: pass `max` to
 * `queue.getRateLimitTtl` to read that limit and not the count of jobs taken this second.
 */
export const NO_QUEUE_LIMIT = { max: 2 ** 31, duration: 1_000 } as const;

/**
 * How long a worker sleeps on the queue's rate limit before it looks again, in ms (BullMQ's
 * `maximumRateLimitDelay`, 30 s by default): a wait ended early (`renderguard resume` once a quota
 * was topped up) is over for every running worker within it, at the cost of a read of Redis.
 */
const RATE_LIMIT_LOOK_MS = 5_000;

/** The worker `createRenderWorker` returns: its `close()` also closes the client and queue it made. */
class RenderWorker extends Worker<RenderJobData, RenderJobResult> {
  private released: Promise<void> | undefined;

  constructor(
    name: string,
    processor: (job: Job<RenderJobData, RenderJobResult>, token?: string, signal?: AbortSignal) => Promise<RenderJobResult>,
    options: WorkerOptions,
    private readonly release: () => Promise<void>,
  ) {
    super(name, processor, options);
  }

  override async close(force = false): Promise<void> {
    await super.close(force);
    this.released ??= this.release();
    await this.released;
  }
}

/**
 * A BullMQ worker that renders each job's data (`{ id, html, …request fields }`) through a
 * renderguard client and stores the bytes in `output`. Its outcome on each job is the fleet's
 * outcome table (`fleetOutcomes`): rendered, the job completes with `{ path, billed: true,
 * attempts }`; a wait longer than the client waits (a spent quota, a long `Retry-After`, an open
 * breaker) makes the whole queue wait (`queue.rateLimit`) and returns the job to wait without
 * spending an attempt; a never-retry code, `render_failed` or unknown billing fails it for good
 * (`UnrecoverableError`, its message starting with the code); a rejected key (401, 402) or a wrong
 * setup pauses the queue and returns the job to wait: fix it, restart the workers, `queue.resume()`.
 *
 * The moment a document is stored, the job's data records it (`rendered: { path, sha256 }`): a job
 * that BullMQ runs again after its worker died (stalled) is not rendered again if the file is there
 * with that hash. What a dead worker had in flight, at most its `concurrency` renders, may be billed
 * twice; a job that stalls twice fails (BullMQ's `maxStalledCount`, 1).
 */
export function createRenderWorker(options: RenderWorkerOptions): Worker<RenderJobData, RenderJobResult> {
  if (typeof options !== "object" || options === null) throw new TypeError("Expected `createRenderWorker` to get an options object.");
  rejectUnknownKeys("createRenderWorker", options, workerOptionKeys);
  const { queue: name, connection, resendUnknown = false } = options;
  if (typeof name !== "string" || name === "") throw new TypeError(`Expected \`queue\` to be a queue's name, got ${describe(name)}.`);
  if (typeof connection !== "string" && (typeof connection !== "object" || connection === null)) {
    throw new TypeError(`Expected \`connection\` to be a redis:// URL or ioredis options, got ${describe(connection)}.`);
  }
  if ((options.client === undefined) === (options.clientOptions === undefined)) {
    throw new TypeError("Expected `createRenderWorker` to be given either `client` or `clientOptions`.");
  }
  const output = outputOf(options.output);
  if (options.concurrency !== undefined) checkNumber("concurrency", options.concurrency, { integer: true, positive: true });
  const { lockDuration = 30_000, stalledInterval = 30_000 } = options;
  checkNumber("lockDuration", lockDuration, { integer: true, positive: true });
  checkNumber("stalledInterval", stalledInterval, { integer: true, positive: true });

  const own = options.clientOptions ? ownClient(options.clientOptions, connection) : undefined;
  const client = options.client ?? (own?.client as RenderClient);
  const bullConnection = typeof connection === "string" ? { url: connection } : connection;
  const queue = new Queue(name, { connection: bullConnection });

  /** Throws what tells BullMQ the job's fate, after what the action asks of the queue or worker. */
  async function failed(error: unknown, job: Job<RenderJobData, RenderJobResult>): Promise<never> {
    if (!isRenderError(error)) throw error;
    const action = fleetAction(error, resendUnknown);
    // BullMQ times its rate limit by the system clock, so the wait is measured on it too.
    const ms = (error.retryAt?.getTime() ?? 0) - systemClock.now();
    if (action === "wait" && ms > 0) {
      await queue.rateLimit(ms);
      // The note is for `status`: a Redis that fails to take it must not turn the wait into a failure.
      await noteWait(queue, ms, describeError(error)).catch(() => {});
      throw Worker.RateLimitError();
    }
    if (action === "halt") {
      await queue.pause();
      await job.log(`Queue paused: ${describeError(error)}`);
      throw Worker.RateLimitError();
    }
    if (action === "stop") {
      await worker.pause(true);
      throw Worker.RateLimitError();
    }
    if (action === "fail") throw new UnrecoverableError(describeError(error));
    throw new Error(describeError(error), { cause: error });
  }

  async function renderJob(job: Job<RenderJobData, RenderJobResult>, _token?: string, signal?: AbortSignal): Promise<RenderJobResult> {
    const { id, rendered, ...request } = job.data;
    // A job added by other means than enqueueRenders: its id names a file, and must stay inside the folder.
    if (!isSafeId(id)) throw new UnrecoverableError(`invalid_request: the job's id ${JSON.stringify(id)} is not 1-200 of A-Z a-z 0-9 . _ - (no leading dot)`);
    if (rendered) {
      if (output.holds(rendered)) return { path: rendered.path, billed: true, attempts: 0 };
      if (!resendUnknown) {
        throw new UnrecoverableError(`output_missing: rendered and billed in an earlier run, but ${rendered.path ?? "its output"} is not there as stored`);
      }
    }
    const result = await client.render(request, { id, ...(signal ? { signal } : {}) }).catch((error: unknown) => failed(error, job));
    let path: string | undefined;
    try {
      path = await output.write({ id, body: result.body, contentType: result.contentType, job });
    } catch (error) {
      const message = `output_not_written: rendered and billed, but not stored: ${(error as Error).message}`;
      throw resendUnknown ? new Error(message, { cause: error }) : new UnrecoverableError(message);
    }
    // The record is what saves a stalled job's retry from a second bill; if Redis refuses it, the
    // document is stored all the same, and the job completes (BullMQ retries its completion).
    await job.updateData({ ...job.data, rendered: { path, sha256: sha256Of(result.body) } }).catch(() => {});
    return { path, billed: true, attempts: result.attempts };
  }

  const worker: Worker<RenderJobData, RenderJobResult> = new RenderWorker(
    name,
    renderJob,
    {
      connection: bullConnection,
      concurrency: options.concurrency ?? client.stats().concurrency,
      limiter: NO_QUEUE_LIMIT,
      lockDuration,
      stalledInterval,
      maximumRateLimitDelay: RATE_LIMIT_LOOK_MS,
    },
    async () => {
      await Promise.all([queue.close(), own?.close()]);
    },
  );
  // The queue's connection errors are the worker's: reported where its user listens, not by
  // ioredis as an unhandled error event with a stack trace.
  queue.on("error", (error) => worker.emit("error", error));
  // Noted once BullMQ has recorded the completion, and as the wait's note, never a failure.
  worker.on("completed", (job) => {
    if (job.stalledCounter > 0 && job.id) noteCompletedAfterStall(queue, job.id).catch(() => {});
  });
  return worker;
}

/** `code (status): message`, as a failed job's reason begins. */
function describeError(error: RenderError): string {
  return `${error.code}${error.status ? ` (${error.status})` : ""}: ${error.message}`;
}

function outputOf(output: unknown): Output {
  if (typeof output === "function") return functionOutput(output as OutputFunction);
  if (typeof output === "string" && output !== "") {
    mkdirSync(output, { recursive: true });
    return folderOutput(output);
  }
  throw new TypeError(`Expected \`output\` to be a folder's path or a function, got ${describe(output)}.`);
}

/** The client a worker makes, its limiter's state in Redis on the queue's connection unless told otherwise. */
function ownClient(clientOptions: RenderClientOptions, connection: string | RedisOptions) {
  if (clientOptions.limiter?.store) {
    const client = createRenderClient(clientOptions);
    return { client, close: () => client.close() };
  }
  // The store's own settings for a connection it opens: a slow or lost Redis degrades it at once.
  const redis =
    typeof connection === "string" ? undefined : new Redis({ ...(connection as IoredisOptions), lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  const store = redisStore(redis ? { client: redis } : { url: connection as string });
  const client = createRenderClient({ ...clientOptions, limiter: { ...clientOptions.limiter, store } });
  return {
    client,
    close: async () => {
      await client.close();
      redis?.disconnect();
    },
  };
}
