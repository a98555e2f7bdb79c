import pRetry from "p-retry";
import { isRenderError, type RenderError, type RenderErrorCode } from "../../core/errors.js";
import type { OutcomeRow } from "../../core/outcome-row.js";
import { rowOf } from "../../core/outcomes.js";
import { Rechecks } from "../../core/rechecks.js";
import type { Meter } from "../../core/stats.js";
import type { AttemptContext, Policy } from "../../core/types.js";
import { type Deps, systemDeps } from "../../util/deps.js";
import { Emitter, type Event } from "../../util/events.js";
import { resolveOptions } from "../../util/options.js";
import { fullJitterBackoff, RetryAfterWaits } from "./backoff.js";
import { costlier, type Job, jobError } from "./job-billing.js";
import { RetryBudget } from "./retry-budget.js";

/** Options of the retry policy (`retry` in the client's options). All optional. */
export interface RetryOptions {
  /**
   * Retries after a job's first send, so at most `maxRetries + 1` sends, but for the resends after
   * a 429 whose `Retry-After` the job waited out: those spend no retry, as the service paces them
   * and the job's deadline bounds them (a batch under a rate limit, or among scattered 429s, should
   * not lose a job to its count of them). A job with no retry left is resent for nothing, so `0`
   * sends once. Most SDKs use 2; this service's `internal_error` comes in bursts of up to about
   * a minute, and the breaker holds jobs through a burst without spending their retries, so 4 ride
   * out a burst without a flood.
   *
   * @default 4
   */
  readonly maxRetries?: number;
  /**
   * Retries of `render_timeout` (408): a page may be slow by nature, and every try of it is slow.
   *
   * @default 1
   */
  readonly renderTimeoutRetries?: number;
  /**
   * Resends a request that was written and got no answer (a reset, a gateway's 502/504). The
   * service may have rendered and billed it, so a retry may bill twice.
   *
   * @default false
   */
  readonly retryAmbiguous?: boolean;
  /**
   * Longest `Retry-After`, in milliseconds, that a job sleeps through. A longer one fails the job
   * at once with the service's error, whose `retryAt` says when the service expects it back.
   *
   * @default 60_000
   */
  readonly maxRetryAfter?: number;
  /**
   * First backoff ceiling, in milliseconds, where the service gave no `Retry-After`; it doubles
   * with each backoff of the job (a resend that waited out a `Retry-After` is not one), and the
   * wait is drawn uniformly below it (full jitter).
   *
   * @default 500
   */
  readonly baseDelay?: number;
  /**
   * Largest backoff ceiling, in milliseconds.
   *
   * @default 30_000
   */
  readonly maxDelay?: number;
  /**
   * Upward spread, in milliseconds, added to a `Retry-After` wait so that jobs told the same
   * instant come back spread out. It grows with the number of jobs that got a `Retry-After` within
   * 50 ms of each other, to the whole amount at 16 or more; a job whose 429 came alone waits exactly
   * `Retry-After`. Never subtracted: no retry comes before `Retry-After`.
   *
   * @default 250
   */
  readonly retryAfterSpread?: number;
  /**
   * Retries allowed per first send over the budget window, shared by all jobs of the client. A 429
   * retry that waits out the service's `Retry-After` does not count: the service paces it.
   *
   * @default 0.2
   */
  readonly budgetRatio?: number;
  /**
   * Retries always allowed per second of the budget window, so a quiet client can still retry.
   *
   * @default 10
   */
  readonly budgetMinPerSecond?: number;
  /**
   * The retry budget's window, in milliseconds.
   *
   * @default 10_000
   */
  readonly budgetWindow?: number;
}

/** The retry options when none are given. */
export const retryDefaults: Readonly<Required<RetryOptions>> = Object.freeze({
  maxRetries: 4,
  renderTimeoutRetries: 1,
  retryAmbiguous: false,
  maxRetryAfter: 60_000,
  baseDelay: 500,
  maxDelay: 30_000,
  retryAfterSpread: 250,
  budgetRatio: 0.2,
  budgetMinPerSecond: 10,
  budgetWindow: 10_000,
});

/** A retry about to happen, after `waitMs`. */
export interface RetryEvent {
  /** The job that retries, as its caller named it; `undefined` when the caller gave no id. */
  readonly jobId: string | undefined;
  /** The send that failed, 1 for the job's first. */
  readonly attempt: number;
  readonly code: RenderErrorCode;
  readonly waitMs: number;
  readonly reason: "retry_after" | "backoff";
}

/** The retry policy: a policy, with its event. */
export type RetryPolicy = Policy & { readonly onRetry: Event<RetryEvent> };

/**
 * A 429 with `Retry-After`: the service paces its resend itself, so it draws neither on the retry
 * budget nor on `maxRetries`.
 */
const pacedByService = (error: RenderError): boolean => error.status === 429 && error.retryAt !== undefined;

/** Resolves and checks retry options; throws a TypeError or RangeError naming the bad one. */
export function resolveRetryOptions(options: RetryOptions | undefined): Readonly<Required<RetryOptions>> {
  const resolved = resolveOptions("retry", retryDefaults, options, {
    maxRetries: { integer: true, min: 0 },
    renderTimeoutRetries: { integer: true, min: 0 },
    maxRetryAfter: { min: 0 },
    baseDelay: { min: 0 },
    maxDelay: { min: 0 },
    retryAfterSpread: { min: 0 },
    budgetRatio: { min: 0 },
    budgetMinPerSecond: { min: 0 },
    budgetWindow: { positive: true },
  });
  if (resolved.baseDelay > resolved.maxDelay) {
    throw new RangeError(
      `Expected \`retry.baseDelay\` (${resolved.baseDelay}) to be at most \`retry.maxDelay\` (${resolved.maxDelay}).`,
    );
  }
  return resolved;
}

/**
 * Resends what the outcome table says may be resent (DESIGN §2), never before `Retry-After`, never
 * past the job's deadline, and within a retry budget shared by every job of the client. A job that
 * `rechecks.refusal` refuses (the client halted, the spend cap reached) ends at once, unsent again,
 * whether the refusal came before its wait or during it.
 */
export function retryPolicy(
  options: RetryOptions = {},
  deps: Deps = systemDeps,
  meter?: Meter,
  rechecks = new Rechecks(deps.clock),
): RetryPolicy {
  const opts = resolveRetryOptions(options);
  const { clock, random } = deps;
  const retryAfterWaits = new RetryAfterWaits(opts.retryAfterSpread, random);
  const budget = new RetryBudget(opts.budgetRatio, opts.budgetMinPerSecond, opts.budgetWindow);
  const retried = new Emitter<RetryEvent>("retry", deps.logger);

  /** Waits out the delay the failed send calls for and says true, or says false at once. */
  async function waitIfRetryable(error: unknown, attempt: number, ctx: AttemptContext, job: Job): Promise<boolean> {
    if (!isRenderError(error)) return false; // a bug, not a service outcome: never retried
    const row = resendRow(error, job);
    if (!row) return false;
    const now = clock.now();
    const retryAfter = error.retryAt === undefined ? undefined : Math.max(0, error.retryAt.getTime() - now);
    // quota_exceeded is worth waiting for only when the service says how long, and that fits.
    if (row.retry === "if_wait_fits" && retryAfter === undefined) return false;
    // Too long to sleep: the error already carries retryAt for the caller (DESIGN §3).
    if (retryAfter !== undefined && retryAfter > opts.maxRetryAfter) return false;
    const reason = retryAfter === undefined ? "backoff" : "retry_after";
    // The backoff doubles with the job's backoffs, not its sends: the resends after a 429 that
    // waited out Retry-After were paced by the service, and a job that met three of them would
    // otherwise wait up to 8 x baseDelay after its first 500.
    const waitMs =
      retryAfter === undefined
        ? fullJitterBackoff(job.backoffs + 1, opts.baseDelay, opts.maxDelay, random)
        : retryAfterWaits.waitMs(now, retryAfter);
    if (ctx.deadline !== undefined && now + waitMs > ctx.deadline) return false;
    const refused = rechecks.refusal(attempt);
    if (refused) throw refused;
    if (!pacedByService(error) && !(await takeRetry(error, attempt, ctx, waitMs))) return false;
    if (reason === "backoff") job.backoffs++;
    retried.emit({ jobId: ctx.jobId, attempt, code: error.code, waitMs, reason });
    const endWait = meter?.beginWait(reason, clock.now(), ctx.jobId);
    const resumed = ctx.owner?.waiting(waitMs);
    try {
      await rechecks.waitOut(waitMs, ctx.signal, attempt);
    } finally {
      resumed?.();
      endWait?.(clock.now());
    }
    return true;
  }

  /**
   * Takes a retry from the budget, waiting for room while it is spent: a job held back waits rather
   * than fails, so a batch against a service that fails often keeps every job and still resends no
   * more than the budget allows. Says false, without waiting, when the room would come too late
   * for the job's deadline (with `waitMs` of backoff after it), or never comes.
   */
  async function takeRetry(error: RenderError, attempt: number, ctx: AttemptContext, waitMs: number): Promise<boolean> {
    let now = clock.now();
    if (budget.tryRetry(now)) return true;
    let waiting = false;
    let endWait: ((end: number) => void) | undefined;
    let resumed: (() => void) | undefined;
    try {
      for (;;) {
        const room = budget.nextRoom(now);
        if (room === undefined || (ctx.deadline !== undefined && room + waitMs > ctx.deadline)) {
          deps.logger.warn(
            { jobId: ctx.jobId, code: error.code, attempt },
            "Retry budget spent, with no room for this retry before the job's deadline: failing the job instead.",
          );
          return false;
        }
        if (!waiting) {
          waiting = true;
          endWait = meter?.beginWait("retry_budget", now, ctx.jobId);
          resumed = ctx.owner?.waiting(room - now + waitMs);
        }
        await rechecks.waitOut(room - now, ctx.signal, attempt);
        now = clock.now();
        if (budget.tryRetry(now)) return true;
      }
    } finally {
      resumed?.();
      endWait?.(clock.now());
    }
  }

  /** The outcome table's row for `error`, the job's latest failure, if the row lets the job resend. */
  function resendRow(error: RenderError, job: Job): OutcomeRow | undefined {
    const row = rowOf(error);
    return row && mayRetry(row, job) ? row : undefined;
  }

  function mayRetry(row: OutcomeRow, job: Job): boolean {
    switch (row.retry) {
      case "never":
        return false;
      case "if_ambiguous_allowed":
        return opts.retryAmbiguous;
      case "limited":
        return job.timeouts <= opts.renderTimeoutRetries;
      default:
        return true;
    }
  }

  const policy: Policy = (next) =>
    async function retrySend(req, ctx) {
      budget.recordFirst(clock.now());
      const job: Job = { attempts: 0, billed: false, timeouts: 0, backoffs: 0 };
      const send = async (attempt: number) => {
        try {
          const result = await next(req, Object.freeze({ ...ctx, attempt }));
          budget.recordAnswer(clock.now(), true);
          return result;
        } catch (error) {
          if (isRenderError(error)) {
            // An outcome of the table's (not a policy's refusal, nor a cancellation): the service's answer.
            const row = rowOf(error);
            if (row) budget.recordAnswer(clock.now(), row.retry === "never");
            job.billed = costlier(job.billed, error.billed);
            job.attempts = Math.max(job.attempts, error.attempts);
            if (error.code === "render_timeout") job.timeouts++;
          }
          throw error;
        }
      };
      // Most jobs succeed at once: the first send goes without p-retry, whose set-up costs more than
      // the rest of the chain. A failed first send is handed to p-retry as its own first attempt, so
      // every decision after it is p-retry's, as if it had made that send itself.
      let firstFailure: unknown;
      try {
        return await send(1);
      } catch (error) {
        firstFailure = error;
      }
      // A failure the table never resends (nor a bug's) ends the job here, as p-retry would, for less.
      if (!isRenderError(firstFailure) || !resendRow(firstFailure, job)) throw jobError(firstFailure, job, ctx.signal);
      try {
        // No `signal` for p-retry: it would throw away a success (already billed) that lands just as
        // the signal aborts. Every wait here honours the signal instead.
        return await pRetry(
          (attempt) => (attempt === 1 ? Promise.reject(firstFailure) : send(attempt)),
          {
            retries: opts.maxRetries,
            minTimeout: 0, // the wait happens in waitIfRetryable, on the injected clock
            maxTimeout: 0,
            shouldRetry: ({ error, attemptNumber }) => waitIfRetryable(error, attemptNumber, ctx, job),
            shouldConsumeRetry: ({ error }) => !(isRenderError(error) && pacedByService(error)),
          },
        );
      } catch (error) {
        throw jobError(error, job, ctx.signal);
      }
    };
  return Object.assign(policy, { onRetry: retried.event });
}
