import { setMaxListeners } from "node:events";
import { invalidRequest, isRenderError, RenderError } from "../core/errors.js";
import type { JobOwner, RenderRequest, RenderResult } from "../core/types.js";
import { type Clock, timerOf } from "../util/clock.js";
import { checkNumber, checkSignal, rejectUnknownKeys } from "../util/options.js";
import { linkSignals, onAbort } from "../util/signals.js";

/** One document of a batch: an id of the caller's, and the request fields (`html`, …). */
export interface BatchJob extends RenderRequest {
  readonly id: string;
}

/** What became of one job. Every job pulled from the source yields exactly one. */
export type BatchResult =
  | { readonly id: string; readonly ok: true; readonly result: RenderResult }
  | { readonly id: string; readonly ok: false; readonly error: RenderError };

/** Options of `client.renderMany()`. All optional. */
export interface RenderManyOptions {
  /**
   * Jobs in progress at once; the client's limiter decides how many are sent. A job waiting out a
   * delay before a resend (`Retry-After`, backoff) sends nothing, so it does not count: up to
   * `4 * concurrency` such jobs wait besides, and jobs told to come back later do not hold up the
   * rest of the batch.
   *
   * @default 8
   */
  readonly concurrency?: number;
  /**
   * Yields results in the order of the source rather than as they complete. A slow job then holds
   * back the ones after it (at most `2 * concurrency` are held, besides jobs waiting before a resend).
   *
   * @default false
   */
  readonly ordered?: boolean;
  /** Aborts the batch: no job is pulled any more, and jobs in progress fail with `aborted`. */
  readonly signal?: AbortSignal;
  /**
   * Drains the batch: no job is pulled any more, a job between sends (waiting for a slot, the
   * breaker or a `Retry-After`) fails at once with `aborted`, unsent, and a job whose request is out
   * gets its answer, which is yielded as usual. What a shutdown (SIGTERM) needs: every render the
   * service may bill is handed out, and no wait outlasts the sends in flight.
   */
  readonly stop?: AbortSignal;
}

/** Every key of `RenderManyOptions`; the compiler keeps the list complete. */
const renderManyOptionKeys = Object.keys({
  concurrency: true,
  ordered: true,
  signal: true,
  stop: true,
} satisfies Record<keyof RenderManyOptions, true>);

/** A batch's job's owner: the `JobOwner` its layers tell of its waits and sends, and the batch's way to stop it. */
export interface BatchJobOwner extends JobOwner {
  /** Takes the job's abort, with which a batch left early stops the job between sends. */
  hold(abort: (reason: unknown) => void): void;
}

type Render = (
  request: RenderRequest,
  options: { signal?: AbortSignal; id?: string },
  owner: BatchJobOwner,
) => Promise<RenderResult>;

/** Jobs waiting before a resend, per unit of `concurrency`, that do not count as in progress. */
const RESENDS_WAITING_PER_JOB = 4;

/**
 * How long a job waiting before a resend keeps its place before another job may take it: a short
 * backoff is not worth another job, and the limiter has had time to answer a burst of 429s before
 * more go.
 */
const HOLD_BEFORE_RESTING_MS = 100;

/**
 * Renders every job of `source` (an iterable or async iterable) through `render`, and yields each
 * outcome. It pulls from the source only as room frees up, so memory stays bounded whatever the
 * batch size, and it keeps no result once yielded. A job with a bad or repeated id fails with
 * `invalid_request`, unsent. Left early, it stops the jobs in progress before their next send and
 * waits for the requests out. An unknown key in `options` throws a TypeError naming the nearest one.
 * `clock` times how long a job waiting before a resend keeps its place.
 */
export async function* renderMany(
  render: Render,
  clock: Clock,
  source: Iterable<BatchJob> | AsyncIterable<BatchJob>,
  options: RenderManyOptions = {},
): AsyncGenerator<BatchResult, void, undefined> {
  rejectUnknownKeys(undefined, options, renderManyOptionKeys);
  const concurrency = options.concurrency ?? 8;
  checkNumber("concurrency", concurrency, { integer: true, min: 1 });
  checkSignal("signal", options.signal);
  checkSignal("stop", options.stop);
  // One batch signal for every job, so the caller's signal gets one listener, not one a job.
  const batch = options.signal ? linkSignals(options.signal) : undefined;
  const signal = batch?.signal;
  if (signal) setMaxListeners(0, signal);
  const maxResting = RESENDS_WAITING_PER_JOB * concurrency;
  const startTimer = timerOf(clock);
  const window = (options.ordered ? 2 * concurrency : concurrency) + maxResting;
  const iterator = toAsyncIterator(source);
  const seen = new Set<string>();
  // Jobs not yet handed out, in source order; each settles to its result and never rejects.
  const pending: Entry[] = [];
  // Settled jobs (unordered mode), in the order they settled.
  const settledOrder: Entry[] = [];
  // Wakes the loop when a job settles or a pull from the source ends.
  let wake: (() => void) | undefined;
  const changed = () => new Promise<void>((resolve) => (wake = resolve));
  const notify = () => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  // One pull from the source at a time, never awaited by the loop itself: a slow source does not
  // hold back results that are ready.
  let pulling: Promise<void> | undefined;
  let exhausted = false;
  let stopped = false;
  let sourceError: { readonly error: unknown } | undefined;

  /** Stops a job in progress before its next send: at once between sends, else once its answer is in. */
  const stopBeforeNextSend = (entry: Entry, reason: unknown) => {
    if (entry.onTheWire > 0) entry.stopAfterSend ??= { reason };
    else entry.abort?.(reason);
  };
  const { stop } = options;
  const drain = () => {
    for (const entry of pending) stopBeforeNextSend(entry, stop?.reason);
    notify();
  };
  const stopListening = stop ? onAbort(stop, drain) : undefined;

  // Jobs in progress that may send, and jobs waiting out a delay before a resend.
  let running = 0;
  let resting = 0;

  const runJob = async (job: BatchJob, owner: BatchJobOwner): Promise<BatchResult> => {
    const id = jobId(job);
    const invalid = checkJob(job, id, seen);
    if (invalid) return { id, ok: false, error: invalid };
    seen.add(id);
    const { id: _id, ...request } = job;
    try {
      const result = await render(request as RenderRequest, signal ? { signal, id } : { id }, owner);
      return { id, ok: true, result };
    } catch (error) {
      return { id, ok: false, error: asRenderError(error) };
    }
  };

  const start = (job: BatchJob): void => {
    const entry = { settled: false, resting: false, onTheWire: 0 } as Entry;
    const rest = () => {
      if (entry.settled || entry.resting) return;
      entry.resting = true;
      running--;
      resting++;
      notify(); // room for another job
    };
    const resume = () => {
      if (!entry.resting) return;
      entry.resting = false;
      resting--;
      running++;
    };
    const owner: BatchJobOwner = {
      waiting(ms) {
        if (ms <= HOLD_BEFORE_RESTING_MS) return () => undefined;
        const clear = startTimer(HOLD_BEFORE_RESTING_MS, rest);
        return () => {
          clear();
          resume();
        };
      },
      sending() {
        entry.onTheWire++;
        return () => {
          if (--entry.onTheWire === 0 && entry.stopAfterSend) entry.abort?.(entry.stopAfterSend.reason);
        };
      },
      hold(abort) {
        entry.abort = abort;
      },
    };
    running++;
    entry.done = runJob(job, owner);
    entry.done.then(() => {
      resume();
      running--;
      entry.settled = true;
      if (!options.ordered) settledOrder.push(entry);
      notify();
    });
    pending.push(entry);
  };

  // Pull only while there is room: backpressure keeps memory flat whatever the batch size.
  const pullIfRoom = () => {
    if (pulling || exhausted || stopped || stop?.aborted || signal?.aborted) return;
    if (pending.length >= window || running >= concurrency || running + resting >= concurrency + maxResting) return;
    pulling = iterator.next().then(
      (next) => {
        pulling = undefined;
        if (next.done) exhausted = true;
        else if (!stopped) {
          start(next.value);
          // Pulled as the batch was drained: it is handed out, stopped before its first send.
          if (stop?.aborted) stopBeforeNextSend(pending[pending.length - 1] as Entry, stop.reason);
        } // else pulled as the consumer left: dropped, never sent
        notify();
      },
      (error: unknown) => {
        // The source broke: hand out what is in progress (rendered, maybe billed), then throw.
        pulling = undefined;
        sourceError = { error };
        exhausted = true;
        notify();
      },
    );
  };

  try {
    for (;;) {
      const ready = options.ordered ? (pending[0]?.settled ? pending[0] : undefined) : settledOrder.shift();
      if (ready) {
        pending.splice(pending.indexOf(ready), 1);
        pullIfRoom(); // the next job starts before this result is handed out
        yield await ready.done;
        continue;
      }
      pullIfRoom();
      if (pending.length === 0 && !pulling) {
        if (sourceError) throw sourceError.error;
        return;
      }
      await changed();
    }
  } finally {
    // The consumer stopped early: close the source, stop the jobs in progress before they send
    // again (those waiting for a slot or a resend fail unsent), and let the ones whose request is
    // out settle, so that no render goes on unseen after the loop.
    stopped = true;
    stopListening?.();
    for (const entry of pending) stopBeforeNextSend(entry, leftEarly());
    if (!exhausted) {
      // A pull still waiting on a slow source is not awaited: its job, if one comes, is dropped.
      const closing = iterator.return?.();
      if (pulling) closing?.catch(() => undefined);
      else await closing;
    }
    await Promise.all(pending.map((entry) => entry.done));
    batch?.dispose();
  }
}

interface Entry {
  done: Promise<BatchResult>;
  settled: boolean;
  /** Waiting out a delay before a resend: not counted as in progress. */
  resting: boolean;
  /** Requests of the job on the wire: a batch left early lets their answers in before it stops the job. */
  onTheWire: number;
  stopAfterSend?: { readonly reason: unknown };
  /** Aborts the job, once the client took it on. */
  abort?: (reason: unknown) => void;
}

const leftEarly = () => new Error("The batch's loop was left: the job was stopped before its next send.");

function toAsyncIterator<T>(source: Iterable<T> | AsyncIterable<T>): AsyncIterator<T> {
  if (source && typeof (source as AsyncIterable<T>)[Symbol.asyncIterator] === "function") {
    return (source as AsyncIterable<T>)[Symbol.asyncIterator]();
  }
  if (source && typeof (source as Iterable<T>)[Symbol.iterator] === "function") {
    const sync = (source as Iterable<T>)[Symbol.iterator]();
    return {
      next: async () => sync.next(),
      return: async (value?: unknown) => sync.return?.(value) ?? { done: true, value: undefined },
    };
  }
  throw new TypeError("Expected the batch source to be an iterable or an async iterable of jobs.");
}

function jobId(job: unknown): string {
  const id = (job as { id?: unknown } | null)?.id;
  return typeof id === "string" || typeof id === "number" ? String(id) : "";
}

function checkJob(job: unknown, id: string, seen: ReadonlySet<string>): RenderError | undefined {
  if (typeof job !== "object" || job === null) return invalidRequest("Expected a job object such as { id, html }.");
  if (id === "") return invalidRequest("Expected the job to have an `id` (a non-empty string).");
  if (seen.has(id)) return invalidRequest(`The id ${JSON.stringify(id)} appeared before in this batch.`);
  if (typeof (job as { html?: unknown }).html !== "string") return invalidRequest("Expected the job's `html` to be a string.");
  return undefined;
}

function asRenderError(error: unknown): RenderError {
  if (isRenderError(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new RenderError({ code: "unknown_error", message, billed: "unknown" }, { cause: error });
}
