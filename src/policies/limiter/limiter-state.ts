import type { RenderErrorCode } from "../../errors.js";
import { ConcurrencyCap } from "./concurrency-cap.js";
import { type RateVerdict, SendRate, type SendRateSettings } from "./send-rate.js";

/** What a finished send told the limiter. */
export interface Observation {
  /** The limiter effect of its outcome (DESIGN §2); `accepted` for a success or a render failure. */
  readonly effect: "accepted" | "slow_down" | "quota_out" | "fewer_concurrent" | "none";
  /** Its `X-Renders-Remaining`. */
  readonly remaining: number | undefined;
  /** Its `Retry-After`, as a time in milliseconds since the epoch. */
  readonly retryAt: number | undefined;
  /** The send was a job's resend, not its first. */
  readonly resend?: boolean;
}

/** A send slot, taken by `acquire` and handed back to `release`. */
export interface Ticket {
  /** Order of sending: a response counts for `remaining` only if sent after the one in force. */
  readonly seq: number;
  /** This send goes first after the quota ran out, alone. */
  readonly probe: boolean;
  /** When it was let go, in milliseconds since the epoch. */
  readonly sentAt: number;
}

/**
 * Why a send must wait: `until` a time, or (undefined) until another send finishes (`breaker`:
 * another process's circuit breaker is open, from a shared store); or, from a shared store, why it
 * must not be sent at all: another process's send found the key unusable.
 */
export type Refusal =
  | { readonly reason: "concurrency" | "rate" | "quota" | "pause" | "breaker"; readonly until: number | undefined }
  | { readonly reason: "halt"; readonly until: undefined; readonly halt: HaltRecord };

/** The answer that halted a client (401, 402), as a shared store keeps it. */
export interface HaltRecord {
  readonly code: RenderErrorCode;
  readonly message: string;
  readonly status: number | undefined;
}

/** What changed, for events. */
export type LimiterChange =
  | { readonly kind: "quota_exhausted"; readonly until: number | undefined }
  | { readonly kind: "paused"; readonly until: number }
  | { readonly kind: "rate"; readonly rate: number; readonly limit: number }
  | { readonly kind: "background"; readonly share: number }
  | { readonly kind: "concurrency"; readonly limit: number };

export interface LimiterSnapshot {
  readonly inFlight: number;
  /** The renders left by the newest response, minus sends in flight; undefined before any header. */
  readonly remaining: number | undefined;
  /** Sends per second, or undefined while unlimited. */
  readonly sendRate: number | undefined;
  readonly concurrency: number;
  /** Milliseconds since the epoch until which sends wait, if they do. */
  readonly pausedUntil: number | undefined;
}

export interface LimiterSettings extends SendRateSettings {
  readonly concurrency: number;
}

/**
 * The limiter's decisions, with time passed in: a concurrency cap, a token bucket that follows
 * `X-Renders-Remaining` (DESIGN §3), a learned send rate, and pauses. Holds no timers.
 */
export class LimiterState {
  private seq = 0;
  private remaining: number | undefined;
  private remainingSeq = 0;
  /** The send whose count was the first or rose (a refill): a count from a send before it may be the last period's. */
  private refillSeq = 0;
  private quotaUntil = 0;
  private probing = false;
  private pauseUntil = 0;
  private readonly cap: ConcurrencyCap;
  private readonly sendRate: SendRate;

  /**
   * @param sendRate the send-rate learner to pace by and teach: a fresh one by default.
   * @param share the part of its rate to pace at: all of it by default; a process of a fleet that
   *   limits its sends on its own, its part of the fleet's sends.
   */
  constructor(
    settings: LimiterSettings,
    sendRate = new SendRate(settings),
    private readonly share: () => number = () => 1,
  ) {
    this.cap = new ConcurrencyCap(settings.concurrency);
    this.sendRate = sendRate;
  }

  acquire(now: number): Ticket | Refusal {
    if (now < this.pauseUntil) return { reason: "pause", until: this.pauseUntil };
    let probe = false;
    if (this.remaining !== undefined && this.remaining - this.cap.inFlight <= 0) {
      // Out of renders: none is sent until Retry-After passes or a newer response refills; then one probe.
      if (this.cap.inFlight > 0 || this.probing) return { reason: "quota", until: undefined };
      if (now < this.quotaUntil) return { reason: "quota", until: this.quotaUntil };
      probe = true;
    }
    if (this.cap.full) return { reason: "concurrency", until: undefined };
    const wait = this.sendRate.take(now, this.share());
    if (wait > 0) return { reason: "rate", until: now + wait };
    this.cap.take();
    this.probing ||= probe;
    return { seq: ++this.seq, probe, sentAt: now };
  }

  release(ticket: Ticket, seen: Observation, now: number): LimiterChange[] {
    if (ticket.probe) this.probing = false;
    const changes: LimiterChange[] = [];
    const limit = this.cap.release(seen.effect);
    if (limit !== undefined) changes.push({ kind: "concurrency", limit });
    // An old response never refills: take a higher count only from a send newer than the one in
    // force. A lower one is the service's newer word whatever order the answers came in (the count
    // only falls within a period), unless it was sent before the last refill.
    if (seen.remaining !== undefined && ticket.seq > this.remainingSeq) {
      if (this.remaining === undefined || seen.remaining > this.remaining) this.refillSeq = ticket.seq;
      this.remaining = seen.remaining;
      this.remainingSeq = ticket.seq;
      this.quotaUntil = seen.remaining === 0 ? (seen.retryAt ?? now) : 0;
    } else if (seen.remaining !== undefined && this.remaining !== undefined && seen.remaining < this.remaining && ticket.seq > this.refillSeq) {
      this.remaining = seen.remaining;
      if (seen.remaining === 0) this.quotaUntil = seen.retryAt ?? now;
    }
    switch (seen.effect) {
      case "accepted":
        this.noteRate(this.sendRate.accept(now, ticket.sentAt, seen.resend === true), seen, changes);
        if (seen.remaining === undefined && this.remaining !== undefined && ticket.seq > this.remainingSeq) {
          // A probe that rendered with no count: renders are back, how many is unknown. Otherwise one
          // fewer than the last count said.
          this.remaining = ticket.probe ? undefined : Math.max(0, this.remaining - 1);
        }
        break;
      case "quota_out":
        // An old 429 never overrides a newer refill (DESIGN §3: out-of-order responses).
        if (ticket.seq < this.remainingSeq && ticket.seq <= this.refillSeq) break;
        this.remaining = 0;
        this.remainingSeq = Math.max(this.remainingSeq, ticket.seq);
        this.quotaUntil = seen.retryAt ?? now;
        changes.push({ kind: "quota_exhausted", until: seen.retryAt });
        break;
      case "slow_down":
        this.noteRate(this.sendRate.limit(now, ticket.sentAt, seen.resend === true), seen, changes);
        break;
    }
    return changes;
  }

  private noteRate(verdict: RateVerdict | undefined, seen: Observation, changes: LimiterChange[]): void {
    const change = rateChange(verdict, seen.retryAt);
    if (change?.kind === "paused") {
      this.pauseUntil = Math.max(this.pauseUntil, change.until);
      changes.push({ kind: "paused", until: this.pauseUntil });
    } else if (change) changes.push(change);
  }

  snapshot(now: number): LimiterSnapshot {
    const rate = this.sendRate.rateAt(now);
    return {
      inFlight: this.cap.inFlight,
      remaining: this.remaining === undefined ? undefined : Math.max(0, this.remaining - this.cap.inFlight),
      sendRate: Number.isFinite(rate) ? rate : undefined,
      concurrency: this.cap.limit,
      pausedUntil: now < this.pauseUntil ? this.pauseUntil : undefined,
    };
  }
}

/**
 * What a send-rate verdict changes: a cut, a background learned, or (nearly every send gets 429
 * whatever the rate) a pause until `retryAt`, the `Retry-After` of the answer that showed it.
 */
export function rateChange(verdict: RateVerdict | undefined, retryAt: number | undefined): LimiterChange | undefined {
  if (verdict?.kind === "cut") return { kind: "rate", rate: verdict.rate, limit: verdict.limit };
  if (verdict?.kind === "background") return verdict;
  if (verdict?.kind === "persistent" && retryAt !== undefined) return { kind: "paused", until: retryAt };
  return undefined;
}
