import { haltedBy, isRenderError, RenderError } from "../../core/errors.js";
import type { OutcomeRow } from "../../core/outcome-row.js";
import { rowOf } from "../../core/outcomes.js";
import { Rechecks } from "../../core/rechecks.js";
import type { Meter } from "../../core/stats.js";
import type { AttemptContext, Policy, RenderResult } from "../../core/types.js";
import { type Deps, systemDeps } from "../../util/deps.js";
import { Emitter, type Event } from "../../util/events.js";
import { checkGroup, rejectUnknownKeys, resolveOptions } from "../../util/options.js";
import { WaitQueue } from "../../util/wait-queue.js";
import type { LimiterChange, LimiterSnapshot, Observation } from "./limiter-state.js";
import type { LimiterStore, StoreDegradedEvent } from "./limiter-store.js";
import { memoryLimiterStore } from "./memory-store.js";

/** Options of the limiter (`limiter` in the client's options). All optional. */
export interface LimiterOptions {
  /**
   * Sends in flight at once, before anything is learned. `demo_busy` lowers it for a while.
   *
   * @default 4
   */
  readonly concurrency?: number;
  /**
   * Longest wait, in milliseconds, for the quota to come back or a pause to end. A longer one fails
   * the job at once, unsent, with `retryAt` (`quota_wait_too_long`, or `paused_too_long`).
   *
   * @default 60_000
   */
  readonly maxWait?: number;
  /**
   * Lowest send rate, in sends per second.
   *
   * @default 1
   */
  readonly minRate?: number;
  /**
   * Where the state lives. The default is this process's memory; `redisStore({ url })` shares it
   * with every process given the same Redis and key.
   *
   * @default memoryLimiterStore(...)
   */
  readonly store?: LimiterStore;
}

/** The limiter's options when none are given (`store`: in memory). */
export const limiterDefaults: Readonly<Required<Omit<LimiterOptions, "store">>> = Object.freeze({
  concurrency: 4,
  maxWait: 60_000,
  minRate: 1,
});

/** The quota ran out; `until` is when the service expects it back, if it said. */
export interface QuotaExhaustedEvent {
  readonly until: Date | undefined;
}
/** Every send waits until `until`: nearly every send got 429, at any rate. */
export interface PauseEvent {
  readonly until: Date;
}
/** The key is unusable (401 or 402) or the setup wrong (`setup_failed`): every later job fails fast, unsent. */
export interface HaltEvent {
  readonly error: RenderError;
  /** The job whose answer halted the client, as its caller named it; `undefined` when it had no id. */
  readonly jobId: string | undefined;
}

/** The limiter: a policy, with its events. */
export type LimiterPolicy = Policy & {
  readonly onQuotaExhausted: Event<QuotaExhaustedEvent>;
  readonly onPause: Event<PauseEvent>;
  readonly onHalt: Event<HaltEvent>;
  readonly onStoreDegraded: Event<StoreDegradedEvent>;
  /** The state now; from a store that answers only asynchronously, as of its last answer. */
  snapshot(): LimiterSnapshot;
  /** The client's breaker opened until `until` (ms since the epoch): a shared store tells every process. */
  breakerOpened(until: number): void;
  /** Closes the store (a shared store's connection, if it opened one). */
  close(): Promise<void>;
};

/**
 * renderguard's own limiter (DESIGN §4.4, §11): a concurrency cap, tokens that follow
 * `X-Renders-Remaining`, a send rate learned from `rate_limited`, pauses, and a halt on 401/402.
 * `rechecks.refusal` is asked before a job waits for a slot and each time it wakes, so that a job
 * that can never be sent does not wait its turn for a slot, the send rate or a pause to learn it;
 * a halt, a spent quota and a pause ask every waiting job of the client again, in every policy.
 */
export function limiterPolicy(
  options: LimiterOptions = {},
  deps: Deps = systemDeps,
  meter?: Meter,
  scope = "default",
  rechecks = new Rechecks(deps.clock),
): LimiterPolicy {
  checkGroup("limiter", options);
  rejectUnknownKeys("limiter", options, [...Object.keys(limiterDefaults), "store"]);
  const { store: customStore, ...settingsOptions } = options;
  if (customStore !== undefined && (typeof customStore !== "object" || customStore === null || typeof customStore.acquire !== "function")) {
    throw new TypeError("Expected `limiter.store` to be a limiter store, such as `redisStore({ url })`.");
  }
  const opts = resolveOptions("limiter", limiterDefaults, settingsOptions, {
    concurrency: { integer: true, positive: true },
    maxWait: { min: 0 },
    minRate: { positive: true },
  });
  const settings = { concurrency: opts.concurrency, minRate: opts.minRate };
  const store = customStore ?? memoryLimiterStore(settings);
  const { clock, logger } = deps;
  const released = new WaitQueue();
  const quotaExhausted = new Emitter<QuotaExhaustedEvent>("quotaExhausted", logger);
  const paused = new Emitter<PauseEvent>("pause", logger);
  const halted = new Emitter<HaltEvent>("halt", logger);
  const storeDegraded = new Emitter<StoreDegradedEvent>("storeDegraded", logger);
  store.open?.({ settings, scope, logger, clock, degraded: (event) => storeDegraded.emit(event) });
  let haltError: RenderError | undefined;
  rechecks.onAskAgain(() => released.wakeAll());
  // A store whose snapshot is a promise: its last answer.
  let last: LimiterSnapshot = {
    inFlight: 0,
    remaining: undefined,
    sendRate: undefined,
    concurrency: opts.concurrency,
    pausedUntil: undefined,
  };

  function failHalted(ctx: AttemptContext): never {
    throw haltedBy(haltError as RenderError, ctx.attempt - 1);
  }

  /** Halts the client on `error` (the key is unusable): every waiting job fails fast now. */
  function halt(error: RenderError, jobId: string | undefined): void {
    haltError = error;
    logger.error({ jobId, code: error.code, status: error.status }, `Halting the client: ${error.message}`);
    // The client's refusal learns of the halt from this event: it comes before the waiting jobs ask.
    halted.emit({ error, jobId });
    rechecks.askAgain();
  }

  /**
   * Waits for a send slot; records why and how long it waited. A job woken by a finished send holds
   * the wake until it either waits again in line or passes it on, so no wake is ever lost.
   */
  async function acquire(ctx: AttemptContext) {
    let endWait: ((end: number) => void) | undefined;
    let woken = false;
    const passOn = () => {
      if (woken) released.wakeOne();
      woken = false;
    };
    try {
      for (;;) {
        if (haltError) failHalted(ctx);
        const refused = rechecks.refusal(ctx.attempt - 1);
        if (refused) throw refused;
        const generation = released.generation;
        const now = clock.now();
        const answer = await store.acquire(now);
        if ("seq" in answer) {
          // A release that freed more than one slot (a refill) lets the next job try too.
          woken = true;
          return answer;
        }
        if (answer.reason === "halt") {
          // Another process sharing the store found the key unusable.
          const { code, message, status } = answer.halt;
          if (!haltError) halt(new RenderError({ code, message, status, billed: false }), undefined);
          failHalted(ctx);
        }
        const { reason } = answer;
        endWait ??= meter?.beginWait(reason, now, ctx.jobId);
        if (released.generation !== generation) continue; // a send finished meanwhile: ask again
        if (answer.until === undefined) {
          // Until a send finishes; a job woken and refused again keeps its place at the front.
          const asked = rechecks.asked;
          await released.wait(ctx.signal, woken);
          if (rechecks.asked === asked) woken = true;
          continue;
        }
        passOn();
        const { until } = answer;
        const tooLong = until - now > opts.maxWait || (ctx.deadline !== undefined && until > ctx.deadline);
        if (tooLong && (reason === "quota" || reason === "pause")) throw waitTooLong(reason, until, ctx);
        await rechecks.sleep(until - now, ctx.signal);
      }
    } finally {
      passOn();
      endWait?.(clock.now());
    }
  }

  /**
   * Gives the slot of the job `jobId` back to the store, with what its send saw. A store that answers
   * at once (the memory store) is done with at once: a promise only while a shared store answers.
   * It never throws: a store that fails is logged, and the next job woken all the same.
   */
  function release(
    ticket: Parameters<LimiterStore["release"]>[0],
    seen: Observation,
    jobId: string | undefined,
  ): Promise<void> | undefined {
    let changes: ReturnType<LimiterStore["release"]>;
    try {
      changes = store.release(ticket, seen, clock.now());
      if (Array.isArray(changes)) {
        report(changes);
        return undefined;
      }
    } catch (error) {
      releaseFailed(error, jobId);
      return undefined;
    }
    // Any thenable, and anything else a store of the caller's may return: a promise of the changes.
    return Promise.resolve(changes)
      .then(report)
      .catch((error: unknown) => releaseFailed(error, jobId));
  }

  /** A shared store that fails must not replace the send's own outcome (a billed render, say). */
  function releaseFailed(error: unknown, jobId: string | undefined): void {
    logger.error({ jobId, err: error }, "The limiter's store failed to record a finished send.");
    released.wakeOne();
  }

  /** Tells of what a release changed, and wakes the next job. */
  function report(changes: LimiterChange[]): void {
    // A spent quota or a pause may be longer than a waiting job may wait: each asks again.
    if (changes.some((change) => change.kind === "quota_exhausted" || change.kind === "paused")) rechecks.askAgain();
    for (const change of changes) {
      if (change.kind === "quota_exhausted") {
        logger.warn({ until: change.until }, "The quota is spent: sends wait for Retry-After.");
        quotaExhausted.emit({ until: change.until === undefined ? undefined : new Date(change.until) });
      } else if (change.kind === "paused") {
        logger.warn({ until: change.until }, "rate_limited came at any rate: every send waits for Retry-After.");
        paused.emit({ until: new Date(change.until) });
      } else {
        logger.debug(change, "Limiter adjusted.");
      }
    }
    // One slot came free: one job tries, and passes on if it got it (O(1) a send, however many wait).
    released.wakeOne();
  }

  const policy: Policy = (next) =>
    async function limitedSend(req, ctx) {
      const ticket = await acquire(ctx);
      try {
        // A job that got its slot as another's answer halted the client goes no further.
        if (haltError) failHalted(ctx);
        ctx.beforeSend?.();
      } catch (error) {
        await release(ticket, { effect: "none", remaining: undefined, retryAt: undefined }, ctx.jobId);
        throw error;
      }
      let result: RenderResult;
      try {
        result = await next(req, ctx);
      } catch (error) {
        if (isRenderError(error) && limiterEffect(error) === "halt" && !haltError) {
          halt(error, ctx.jobId);
          // The key is the fleet's; a wrong setup is this process's own.
          if (error.code !== "setup_failed") await shareHalt(error);
        }
        await release(ticket, { ...observe(error), resend: ctx.attempt > 1 }, ctx.jobId);
        throw error;
      }
      const seen = { effect: "accepted", remaining: result.remaining, retryAt: result.retryAt?.getTime(), resend: ctx.attempt > 1 } as const;
      const releasing = release(ticket, seen, ctx.jobId);
      if (releasing) await releasing;
      return result;
    };

  /** Tells a shared store of a halt, so that every process sharing it halts too. */
  async function shareHalt(error: RenderError): Promise<void> {
    try {
      await store.halt?.({ code: error.code, message: error.message, status: error.status });
    } catch (storeError) {
      logger.error({ err: storeError }, "The limiter's store failed to record the halt.");
    }
  }

  return Object.assign(policy, {
    onQuotaExhausted: quotaExhausted.event,
    onPause: paused.event,
    onHalt: halted.event,
    onStoreDegraded: storeDegraded.event,
    snapshot: () => {
      const current = store.snapshot(clock.now());
      if (!(current instanceof Promise)) return current;
      current.then(
        (answer) => (last = answer),
        (error: unknown) => logger.error({ err: error }, "The limiter's store failed to tell its state."),
      );
      return last;
    },
    breakerOpened: (until: number) => {
      Promise.resolve(store.breakerOpened?.(until)).catch((error: unknown) =>
        logger.error({ err: error }, "The limiter's store failed to record the breaker's opening."),
      );
    },
    close: async () => {
      await store.close?.();
    },
  });
}

function limiterEffect(error: RenderError): OutcomeRow["limiter"] | undefined {
  return rowOf(error)?.limiter;
}

function observe(error: unknown): Observation {
  if (!isRenderError(error)) return { effect: "none", remaining: undefined, retryAt: undefined };
  const effect = limiterEffect(error);
  return {
    // render_failed: the service accepted the send and rendered it.
    effect:
      error.code === "render_failed"
        ? "accepted"
        : effect === "slow_down" || effect === "quota_out" || effect === "fewer_concurrent"
          ? effect
          : "none",
    remaining: error.remaining,
    retryAt: error.retryAt?.getTime(),
  };
}

/** What became of a job that a wait stopped: never sent, or not sent again. */
function notSentAgain(ctx: AttemptContext): string {
  return ctx.attempt === 1 ? "it was not sent" : "it was not sent again";
}

function waitTooLong(reason: "quota" | "pause", until: number, ctx: AttemptContext): RenderError {
  return new RenderError({
    code: reason === "quota" ? "quota_wait_too_long" : "paused_too_long",
    message:
      reason === "quota"
        ? `The quota is spent until ${new Date(until).toISOString()}, later than this job may wait; ${notSentAgain(ctx)}.`
        : `Sends are paused by rate_limited until ${new Date(until).toISOString()}, later than this job may wait; ${notSentAgain(ctx)}.`,
    billed: false,
    retryAt: new Date(until),
    attempts: ctx.attempt - 1,
  });
}
