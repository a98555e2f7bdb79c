import { type DurationSummary, Durations } from "../util/durations.js";
import { Emitter, type Event } from "../util/events.js";
import type { Logger } from "../util/logger.js";
import type { Billed, RenderErrorCode } from "./errors.js";
import type { Outcome } from "./outcomes.js";

/** Why a job waited. */
export type WaitReason =
  /** The service's `Retry-After` on the job's own failure. */
  | "retry_after"
  /** Exponential backoff, where the service gave no `Retry-After`. */
  | "backoff"
  /** The circuit breaker was open. */
  | "breaker"
  /** The limiter's send rate, learned from `rate_limited`. */
  | "rate"
  /** The quota was spent (`X-Renders-Remaining` 0) until `Retry-After`. */
  | "quota"
  /** All sends paused after repeated 429s. */
  | "pause"
  /** The concurrency cap. */
  | "concurrency"
  /** The retry budget was spent: a resend waited for room in it. */
  | "retry_budget";

/** The client's counters since it was built. */
export interface RenderStats {
  /** Sends made to the service. */
  readonly attempts: number;
  /** Renders billed: successes and `render_failed`. */
  readonly billed: number;
  /** Sends that may have been billed: the request left and no answer came, or the answer reads both ways. */
  readonly possiblyBilled: number;
  /** Free failed sends, by code. */
  readonly freeErrors: Readonly<Partial<Record<RenderErrorCode, number>>>;
  /** Sends after a job's first. */
  readonly retries: number;
  /** Time jobs spent waiting, in milliseconds, by reason (summed over jobs). */
  readonly waited: Readonly<Record<WaitReason, number>>;
  /** Jobs waiting now, by reason. */
  readonly waiting: Readonly<Record<WaitReason, number>>;
  /** The newest failed send's code and message (the cause, as a transport put it), if any failed. */
  readonly lastError: { readonly code: RenderErrorCode; readonly message: string } | undefined;
  /** Sends by outcome: `ok`, or the error code the answer (or its absence) was read as. */
  readonly sends: Readonly<Partial<Record<SendOutcome, number>>>;
  /** How long sends took: each from the request handed to the transport to its answer, no wait or queue. */
  readonly sendDuration: DurationSummary;
  /** Jobs finished, by outcome: `ok`, or the code the job failed with. */
  readonly jobs: Readonly<Partial<Record<SendOutcome, number>>>;
  /** How long finished jobs took, waits and resends included. */
  readonly jobDuration: DurationSummary;
  /** Jobs begun and not finished. */
  readonly jobsActive: number;
}

/** What a send or a job came to: `ok`, or an error code. */
export type SendOutcome = "ok" | RenderErrorCode;

/** A send's answer came in (or the send failed): what it took and what it came to. */
export interface SendEvent {
  /** The job, as its caller named it; `undefined` when the caller gave no id. */
  readonly jobId: string | undefined;
  /** The job's send number, 1 for its first. */
  readonly attempt: number;
  /** The send alone, in milliseconds: from the request handed to the transport to its answer. */
  readonly ms: number;
  /** The HTTP status, when an answer came. */
  readonly status: number | undefined;
  readonly outcome: SendOutcome;
  readonly billed: Billed;
}

/** A job finished. */
export interface JobEvent {
  readonly jobId: string | undefined;
  readonly outcome: SendOutcome;
  /** Whether the job was billed: a job's billed or maybe-billed send is always its last. */
  readonly billed: Billed;
  /** From the call to the result, in milliseconds. */
  readonly ms: number;
}

/** A job finished waiting. */
export interface WaitEvent {
  /** The job that waited, as its caller named it; `undefined` when the caller gave no id. */
  readonly jobId: string | undefined;
  readonly reason: WaitReason;
  /** How long it waited, in milliseconds. */
  readonly ms: number;
}

const noWaits = (): Record<WaitReason, number> => ({
  retry_after: 0,
  backoff: 0,
  breaker: 0,
  rate: 0,
  quota: 0,
  pause: 0,
  concurrency: 0,
  retry_budget: 0,
});

/**
 * Counts sends, jobs, billing and waits for `client.stats()` and the telemetry. One per client,
 * which makes its own: the package exports only the type, which policies built by hand may leave out.
 */
export class Meter {
  private attempts = 0;
  private billed = 0;
  private possiblyBilled = 0;
  private retries = 0;
  private readonly freeErrors: Partial<Record<RenderErrorCode, number>> = {};
  private readonly waited = noWaits();
  private readonly waiting = noWaits();
  private lastError: RenderStats["lastError"];
  private readonly sends: Partial<Record<SendOutcome, number>> = {};
  private readonly sendDuration = new Durations();
  private readonly jobs: Partial<Record<SendOutcome, number>> = {};
  private readonly jobDuration = new Durations();
  private jobsActive = 0;
  private readonly waits: Emitter<WaitEvent>;
  private readonly sent: Emitter<SendEvent>;
  private readonly finished: Emitter<JobEvent>;
  readonly onWait: Event<WaitEvent>;
  readonly onSend: Event<SendEvent>;
  readonly onJob: Event<JobEvent>;

  constructor(logger: Logger) {
    this.waits = new Emitter<WaitEvent>("wait", logger);
    this.onWait = this.waits.event;
    this.sent = new Emitter<SendEvent>("send", logger);
    this.onSend = this.sent.event;
    this.finished = new Emitter<JobEvent>("job", logger);
    this.onJob = this.finished.event;
  }

  /**
   * Records one send's outcome; `attempt` is the job's send number (1 for its first), `ms` how long
   * the send alone took.
   */
  recordAttempt(
    outcome: Pick<Outcome, "billed" | "code" | "status">,
    attempt: number,
    ms: number,
    jobId: string | undefined,
  ): void {
    this.attempts++;
    if (attempt > 1) this.retries++;
    if (outcome.billed === true) this.billed++;
    else if (outcome.billed === "unknown") this.possiblyBilled++;
    else if (outcome.code) this.freeErrors[outcome.code] = (this.freeErrors[outcome.code] ?? 0) + 1;
    const result = outcome.code ?? "ok";
    this.sends[result] = (this.sends[result] ?? 0) + 1;
    this.sendDuration.record(ms);
    if (this.sent.listened) this.sent.emit({ jobId, attempt, ms, status: outcome.status, outcome: result, billed: outcome.billed });
  }

  /** Records why the newest send failed, with its message already scrubbed of the key. */
  recordFailure(code: RenderErrorCode, message: string): void {
    this.lastError = Object.freeze({ code, message });
  }

  /** Notes that a job began at `now` (ms), and returns `now` for `jobEnded`. */
  jobStarted(now: number): number {
    this.jobsActive++;
    return now;
  }

  /** Notes that the job begun at `started` ended at `end` (ms), with what it came to. */
  jobEnded(started: number, end: number, jobId: string | undefined, outcome: SendOutcome, billed: Billed): void {
    this.jobsActive--;
    const ms = Math.max(0, end - started);
    this.jobs[outcome] = (this.jobs[outcome] ?? 0) + 1;
    this.jobDuration.record(ms);
    if (this.finished.listened) this.finished.emit({ jobId, outcome, billed, ms });
  }

  /**
   * Notes that the job `jobId` starts waiting, at `now` (ms); call the returned function, with the
   * time, when it stops.
   */
  beginWait(reason: WaitReason, now: number, jobId: string | undefined): (end: number) => void {
    this.waiting[reason]++;
    return (end) => {
      this.waiting[reason]--;
      const ms = Math.max(0, end - now);
      this.waited[reason] += ms;
      if (this.waits.listened) this.waits.emit({ jobId, reason, ms });
    };
  }

  /** Renders billed or maybe billed so far, the count a spend cap is held against. */
  get spent(): number {
    return this.billed + this.possiblyBilled;
  }

  /** The counters now, as `client.stats()` reports them. */
  snapshot(): RenderStats {
    return {
      attempts: this.attempts,
      billed: this.billed,
      possiblyBilled: this.possiblyBilled,
      freeErrors: { ...this.freeErrors },
      retries: this.retries,
      waited: { ...this.waited },
      waiting: { ...this.waiting },
      lastError: this.lastError,
      sends: { ...this.sends },
      sendDuration: this.sendDuration.summary(),
      jobs: { ...this.jobs },
      jobDuration: this.jobDuration.summary(),
      jobsActive: this.jobsActive,
    };
  }
}
