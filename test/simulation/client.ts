import { fullJitterBackoff } from "../../src/policies/retry/backoff.js";
import type { EventHeap } from "./event-heap.js";
import type { Random } from "./prng.js";
import type { SendGate } from "./send-gate.js";
import type { Answer, SimService } from "./service.js";

/**
 * How jobs reach the client: one `renderMany` batch with `concurrency` places, or `concurrency`
 * callers of `render()`, each rendering one job at a time.
 */
export type ClientShape = "renderMany" | "callers";

/** What a run counts, over every process of it. */
export interface Tally {
  done: number;
  failed: number;
  sends: number;
  /** 429s from the rate limit itself. */
  limit429: number;
  scattered429: number;
  internalErrors: number;
  /** Resends that left before the `Retry-After` of the job's last 429 was up: must stay 0. */
  earlyResends: number;
  /** When the last job finished, in milliseconds. */
  finishedAt: number;
}

/**
 * The retry policy's defaults (src/policies/retry/retry.ts): backoff retries, their base and cap, the
 * Retry-After spread. Simplified on purpose: the spread here is always drawn from the whole 250 ms
 * (the real one grows with the herd of 429s, `RetryAfterWaits`), and there is no retry budget.
 */
const MAX_RETRIES = 4;
const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 30_000;
const RETRY_AFTER_SPREAD_MS = 250;
/** A batch's job holds its place this long before a resend, then gives it up (src/batch/render-many.ts). */
const HOLD_BEFORE_RESTING_MS = 100;
/** Jobs waiting out a delay that `renderMany` keeps besides those in progress, per place. */
const RESTING_PER_PLACE = 4;

interface Job {
  /** Sends made so far. */
  sends: number;
  /** Backoffs after a 500 so far. */
  backoffs: number;
  /** When the `Retry-After` of the job's last 429 is up, in milliseconds. */
  notBefore: number;
}

/**
 * One process of the simulated client: jobs go through `gate` to `service`, and retry as
 * renderguard's retry policy does. A 429 waits its `Retry-After` plus a spread of up to 250 ms,
 * resent as often as it comes; a 500 backs off with full jitter, at most 4 times, then fails the job.
 * Jobs told to wait for a release line up first in, first out, one woken a release; a woken job that
 * is refused again keeps its place at the front, and one that goes wakes the next (as `limiter.ts`).
 */
export class SimClient {
  private jobsLeft: number;
  /** Jobs in progress (renderMany), which may exceed `concurrency` while resting jobs come back. */
  private running = 0;
  private resting = 0;
  private readonly waiting: Job[] = [];

  constructor(
    private readonly heap: EventHeap,
    private readonly service: SimService,
    private readonly gate: SendGate,
    private readonly random: Random,
    private readonly shape: ClientShape,
    private readonly concurrency: number,
    jobs: number,
    private readonly tally: Tally,
  ) {
    this.jobsLeft = jobs;
  }

  /** Starts the first jobs, at the heap's time. */
  start(): void {
    if (this.shape === "renderMany") this.fill();
    else for (let i = 0; i < this.concurrency; i++) this.startJob();
  }

  /** Pulls jobs while there is room, as `renderMany` does. */
  private fill(): void {
    while (this.jobsLeft > 0 && this.running < this.concurrency && this.running + this.resting < this.concurrency * (1 + RESTING_PER_PLACE)) {
      this.running++;
      this.startJob();
    }
  }

  private startJob(): void {
    if (this.jobsLeft === 0) return;
    this.jobsLeft--;
    this.ask({ sends: 0, backoffs: 0, notBefore: -Infinity }, false);
  }

  /** The job asks the gate to send; `woken` if a release woke it. */
  private ask(job: Job, woken: boolean): void {
    const now = this.heap.now;
    const admission = this.gate.admit(now);
    if (admission.kind === "wake") {
      if (woken) this.waiting.unshift(job);
      else this.waiting.push(job);
      return;
    }
    if (woken) this.wakeOne(); // the release may have freed more than it took
    if (admission.kind === "retry") this.heap.at(admission.at, () => this.ask(job, false));
    else if (admission.at > now) this.heap.at(admission.at, () => this.send(job, admission.ticket));
    else this.send(job, admission.ticket);
  }

  private wakeOne(): void {
    const job = this.waiting.shift();
    if (job) this.heap.at(this.heap.now, () => this.ask(job, true));
  }

  private send(job: Job, ticket: unknown): void {
    const now = this.heap.now;
    this.gate.leave(ticket, now);
    this.tally.sends++;
    if (now < job.notBefore) this.tally.earlyResends++;
    const resend = job.sends++ > 0;
    const answer = this.service.send(now, resend);
    this.heap.at(answer.answeredAt, () => this.answered(job, ticket, answer, resend));
  }

  private answered(job: Job, ticket: unknown, answer: Answer, resend: boolean): void {
    const now = this.heap.now;
    this.gate.settle(ticket, answer, resend, now);
    this.wakeOne();
    switch (answer.kind) {
      case "accepted":
        this.tally.done++;
        this.finish();
        return;
      case "limit_429":
      case "scattered_429": {
        if (answer.kind === "limit_429") this.tally.limit429++;
        else this.tally.scattered429++;
        const retryAfter = answer.retryAfterMs ?? 0;
        job.notBefore = now + retryAfter;
        this.resendAfter(job, retryAfter + Math.floor(this.random() * RETRY_AFTER_SPREAD_MS));
        return;
      }
      case "internal_error":
        this.tally.internalErrors++;
        if (job.backoffs === MAX_RETRIES) {
          this.tally.failed++;
          this.finish();
          return;
        }
        job.backoffs++;
        this.resendAfter(job, fullJitterBackoff(job.backoffs, BASE_DELAY_MS, MAX_DELAY_MS, this.random));
    }
  }

  /** Waits `waitMs` before the job asks again; a batch's job gives up its place after holding it a while. */
  private resendAfter(job: Job, waitMs: number): void {
    const now = this.heap.now;
    if (this.shape === "renderMany" && waitMs > HOLD_BEFORE_RESTING_MS) {
      this.heap.at(now + HOLD_BEFORE_RESTING_MS, () => {
        this.running--;
        this.resting++;
        this.fill();
      });
      this.heap.at(now + waitMs, () => {
        this.resting--;
        this.running++;
        this.ask(job, false);
      });
    } else {
      this.heap.at(now + waitMs, () => this.ask(job, false));
    }
  }

  private finish(): void {
    this.tally.finishedAt = this.heap.now;
    if (this.shape === "callers") {
      this.startJob();
      return;
    }
    this.running--;
    this.fill();
  }
}
