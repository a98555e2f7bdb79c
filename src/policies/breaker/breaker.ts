import { isRenderError, type RenderError } from "../../core/errors.js";
import { isBreakerFailure } from "../../core/outcomes.js";
import { Rechecks } from "../../core/rechecks.js";
import type { Meter } from "../../core/stats.js";
import type { AttemptContext, Policy } from "../../core/types.js";
import { type Deps, systemDeps } from "../../util/deps.js";
import { Emitter, type Event } from "../../util/events.js";
import { describe, resolveOptions } from "../../util/options.js";
import { WaitQueue } from "../../util/wait-queue.js";
import {
  type Admission,
  BreakerState,
  type CircuitState,
  type FailureRun,
  type Transition,
  type Verdict,
} from "./breaker-state.js";
import { circuitOpenError } from "./circuit-open.js";

/** Options of the circuit breaker (`breaker` in the client's options). All optional. */
export interface BreakerOptions {
  /**
   * Breaker failures in a row (`internal_error`, a gateway's 5xx, network errors) that open it,
   * after a quiet spell. Where the window's other sends fail too (scattered, at least
   * `minimumVolume` of them), it takes a run longer than such a share makes by chance: 9 in a row
   * among sends that fail 3 in 10, still 5 at 1 in 10.
   *
   * @default 5
   */
  readonly consecutiveFailures?: number;
  /**
   * Share of breaker failures among the sends of the window that opens it, once `minimumVolume` is met.
   *
   * @default 0.5
   */
  readonly failureRatio?: number;
  /**
   * Sends in the window before `failureRatio` is judged.
   *
   * @default 20
   */
  readonly minimumVolume?: number;
  /**
   * The rolling window for `failureRatio`, in milliseconds.
   *
   * @default 10_000
   */
  readonly window?: number;
  /**
   * How long it stays open the first time, in milliseconds; each failed probe doubles it.
   *
   * @default 1_000
   */
  readonly openTime?: number;
  /**
   * Longest open time, in milliseconds: the spec says a burst "may clear within about a minute".
   *
   * @default 60_000
   */
  readonly maxOpenTime?: number;
  /**
   * What a job does while the breaker is open: `"wait"` until a probe gets through (within the
   * job's deadline: batches want this), or `"fail"` at once with `circuit_open` (free, unsent).
   *
   * @default "wait"
   */
  readonly onOpen?: "wait" | "fail";
}

/** The breaker's options when none are given. */
export const breakerDefaults: Readonly<Required<BreakerOptions>> = Object.freeze({
  consecutiveFailures: 5,
  failureRatio: 0.5,
  minimumVolume: 20,
  window: 10_000,
  openTime: 1_000,
  maxOpenTime: 60_000,
  onOpen: "wait",
});

/** The breaker opened; `run` is the run of failures that opened it, for reporting. */
export interface BreakerOpenEvent {
  readonly run: FailureRun;
  readonly openMs: number;
  /** True when a half-open probe failed and the breaker opened again. */
  readonly reopened: boolean;
  readonly until: Date;
}

/** The breaker closed after a probe succeeded. */
export interface BreakerCloseEvent {
  readonly run: FailureRun | undefined;
}

/** The circuit breaker: a policy, with its events and its state. */
export type BreakerPolicy = Policy & {
  readonly onOpen: Event<BreakerOpenEvent>;
  readonly onClose: Event<BreakerCloseEvent>;
  /** The state now. */
  state(): CircuitState;
  /** Times it opened. */
  openings(): number;
};

/**
 * A circuit breaker for runs of `internal_error` (DESIGN §4.3). Only breaker failures of the outcome
 * table count; 4xx, 408 and 429 count as neither failure nor success. While open nothing is sent;
 * half-open lets one probe through. A job waiting for it that `rechecks.refusal` refuses (the client
 * halted, the spend cap reached) ends at once, unsent.
 */
export function breakerPolicy(
  options: BreakerOptions = {},
  deps: Deps = systemDeps,
  meter?: Meter,
  rechecks = new Rechecks(deps.clock),
): BreakerPolicy {
  const opts = resolveOptions("breaker", breakerDefaults, options, {
    consecutiveFailures: { integer: true, positive: true },
    failureRatio: { positive: true },
    minimumVolume: { integer: true, min: 1 },
    window: { positive: true },
    openTime: { positive: true },
    maxOpenTime: { positive: true },
  });
  if (opts.onOpen !== "wait" && opts.onOpen !== "fail") {
    throw new TypeError(`Expected \`breaker.onOpen\` to be "wait" or "fail", got ${describe(opts.onOpen)}.`);
  }
  const { clock, logger } = deps;
  const machine = new BreakerState(opts);
  const opened = new Emitter<BreakerOpenEvent>("breakerOpen", logger);
  const closed = new Emitter<BreakerCloseEvent>("breakerClose", logger);
  const changes = new WaitQueue();
  rechecks.onAskAgain(() => changes.wakeAll());

  function report(transition: Transition | undefined, now: number): void {
    if (transition?.to === "open") {
      const { run, openMs, reopened } = transition;
      const fields = { run, openMs, until: new Date(now + openMs).toISOString() };
      if (reopened) logger.warn(fields, "Circuit breaker opened again: the probe failed.");
      else logger.error(fields, `Circuit breaker opened after a run of ${run.count} failures: no send until it half-opens (\`run\` has their codes and messages for the service's support).`);
      opened.emit({ run, openMs, reopened, until: new Date(now + openMs) });
    } else if (transition?.to === "closed") {
      logger.info({ run: transition.run }, "Circuit breaker closed: the probe succeeded.");
      closed.emit({ run: transition.run });
    }
  }

  /**
   * Whether this job goes as the half-open probe, once it may send: at once while the breaker lets
   * sends through, else a promise that waits (see `waitForAdmission`).
   */
  function admit(ctx: AttemptContext): boolean | Promise<boolean> {
    const now = clock.now();
    const admission = machine.admit(now);
    if (admission.kind !== "blocked") return admission.kind === "probe";
    return waitForAdmission(ctx, admission, now);
  }

  /** Waits, from a refusal at `refusedAt` on, until this job may send; true when it goes as the probe. */
  async function waitForAdmission(ctx: AttemptContext, refusal: Admission, refusedAt: number): Promise<boolean> {
    let endWait: ((end: number) => void) | undefined;
    let admission = refusal;
    let now = refusedAt;
    try {
      while (admission.kind === "blocked") {
        const { until } = admission;
        const tooLate = until !== undefined && ctx.deadline !== undefined && until > ctx.deadline;
        if (opts.onOpen === "fail" || tooLate) throw circuitOpen(until, ctx);
        const refused = rechecks.refusal(ctx.attempt - 1);
        if (refused) throw refused;
        endWait ??= meter?.beginWait("breaker", now, ctx.jobId);
        if (until === undefined) await changes.wait(ctx.signal);
        else await rechecks.sleep(until - now, ctx.signal);
        now = clock.now();
        admission = machine.admit(now);
      }
      return admission.kind === "probe";
    } finally {
      endWait?.(clock.now());
    }
  }

  function settle(verdict: Verdict, probe: boolean, sent: number | undefined, code?: string, message?: string): void {
    const now = clock.now();
    report(machine.record(verdict, now, probe, sent, code, message), now);
    if (probe) changes.wakeAll(); // the probe's slot is free, or the state changed
  }

  const policy: Policy = (next) =>
    async function breakerSend(req, ctx) {
      for (;;) {
        const admitted = admit(ctx);
        let probe = typeof admitted === "boolean" ? admitted : await admitted;
        let blocked: RenderError | undefined;
        let sent: number | undefined;
        // Asked again when the job gets its send slot: it may have queued while the breaker opened.
        const beforeSend = () => {
          if (!probe) {
            const admission = machine.admit(clock.now());
            if (admission.kind === "probe") probe = true;
            else if (admission.kind === "blocked") throw (blocked = circuitOpen(admission.until, ctx));
          }
          sent = machine.sent();
        };
        let result: Awaited<ReturnType<typeof next>>;
        try {
          result = await next(req, Object.freeze({ ...ctx, beforeSend }));
        } catch (error) {
          if (error !== undefined && error === blocked) {
            if (opts.onOpen === "fail") throw error;
            continue; // unsent: it waits for the breaker like any job that arrives now
          }
          const verdict = isBreakerFailure(error) ? "failure" : "neutral";
          settle(verdict, probe, sent, isRenderError(error) ? error.code : undefined, (error as Error)?.message);
          throw error;
        }
        settle("success", probe, sent);
        return result;
      }
    };

  return Object.assign(policy, {
    onOpen: opened.event,
    onClose: closed.event,
    state: () => machine.current(clock.now()),
    openings: () => machine.openings,
  });
}

function circuitOpen(until: number | undefined, ctx: AttemptContext): RenderError {
  const message = "The circuit breaker is open after a run of service failures; nothing was sent.";
  return circuitOpenError(message, until, ctx);
}
