import type { RenderErrorCode } from "../../core/errors.js";
import { gcraTake } from "./gcra.js";
import { freshSendRate, learn, rateOf, type RateVerdict, type SendRateState } from "./send-rate.js";

/** What a finished send told the limiter. */
export interface Observation {
  /** The limiter effect of its outcome (DESIGN §2); `accepted` for a success or a render failure. */
  readonly effect: "accepted" | "slow_down" | "quota_out" | "fewer_concurrent" | "none";
  /** Its `X-Renders-Remaining`. */
  readonly remaining: number | undefined;
  /** Its `Retry-After`, as a time in milliseconds since the epoch. */
  readonly retryAt: number | undefined;
  /** The send was a job's resend (after its `Retry-After` or a backoff), not its first. */
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
  | { readonly kind: "concurrency"; readonly limit: number };

/** The limiter's state at one moment, as `client.stats()` reports it. */
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

/** The limiter's options, defaults applied, as a store is given them. */
export interface LimiterSettings {
  /** Sends in flight at once, per process. */
  readonly concurrency: number;
  /** Lowest send rate, in sends per second. */
  readonly minRate: number;
}

/**
 * The limiter's state that every process of a fleet shares: plain data, kept in memory by the
 * memory store and as one versioned JSON value by the Redis store. The rules below are its only
 * writers, so both stores decide alike.
 */
export interface LimiterRecord {
  /** Sends granted: the seq of the last one. */
  seq: number;
  /** The renders left by the count in force, and the send that brought it; null before any count. */
  remaining: number | null;
  remainingSeq: number;
  /** The send whose count was the first or rose (a refill): a count from a send before it may be the last period's. */
  refillSeq: number;
  /**
   * The sends granted (`seq`) when the count in force came: a send granted after it was sent after
   * that count was made, so a higher count from it is a refill. A higher count from a send granted
   * before may be an older answer that came late (a fleet's processes record their answers in no
   * set order), so it is not taken.
   */
  countSeq: number;
  /** Out of renders: no send before this time (ms), then one probe. */
  quotaUntil: number;
  /** The one probe after the quota ran out is in flight. */
  probing: boolean;
  /** Every send waits until this time (ms): 429s came at any rate. */
  pauseUntil: number;
  sendRate: SendRateState;
}

export function freshRecord(): LimiterRecord {
  return {
    seq: 0,
    remaining: null,
    remainingSeq: 0,
    refillSeq: 0,
    countSeq: 0,
    quotaUntil: 0,
    probing: false,
    pauseUntil: 0,
    sendRate: freshSendRate(),
  };
}

/**
 * Whether a send may go at `now` with `inFlight` sends out (the fleet's, for a shared store): a
 * refusal, or a grant (`probe`: the one send let go after the quota ran out). The send rate and the
 * concurrency cap are the store's to apply.
 */
export function admit(record: LimiterRecord, now: number, inFlight: number): Refusal | { readonly probe: boolean } {
  if (now < record.pauseUntil) return { reason: "pause", until: record.pauseUntil };
  if (record.remaining === null || record.remaining - inFlight > 0) return { probe: false };
  // Out of renders: none is sent until Retry-After passes or a newer response refills; then one probe.
  if (inFlight > 0 || record.probing) return { reason: "quota", until: undefined };
  if (now < record.quotaUntil) return { reason: "quota", until: record.quotaUntil };
  return { probe: true };
}

/** Records a grant: the send's seq, and the probe taken. */
export function grant(record: LimiterRecord, probe: boolean, now: number): Ticket {
  record.seq++;
  record.probing ||= probe;
  return { seq: record.seq, probe, sentAt: now };
}

/** The theoretical arrival time of a GCRA pace, which a store keeps beside its record. */
export interface Pace {
  tat: number;
}

/**
 * Takes a send at `now` with `inFlight` sends out, on a record the caller holds: the record's
 * refusal, else the pace's, else a grant with the pace moved on. The memory store's step, and the
 * Redis store's on its own copy while Redis is away.
 */
export function take(record: LimiterRecord, pace: Pace, now: number, inFlight: number): Ticket | Refusal {
  const admitted = admit(record, now, inFlight);
  if ("reason" in admitted) return admitted;
  const paced = gcraTake(pace.tat, now, paceOf(record));
  if (paced.wait > 0) return { reason: "rate", until: now + paced.wait };
  pace.tat = paced.tat;
  return grant(record, admitted.probe, now);
}

/**
 * Records what the send of `ticket` saw (DESIGN §3: an old response never refills, an old 429 never
 * overrides a newer refill), teaches the send rate, and returns what changed.
 */
export function settle(record: LimiterRecord, ticket: Ticket, seen: Observation, now: number, minRate: number): LimiterChange[] {
  if (ticket.probe) record.probing = false;
  const changes: LimiterChange[] = [];
  // A higher count only from a send granted after the count in force came (`countSeq`): a newer seq
  // alone does not make a newer answer (a fleet records one process's answer after another's that
  // the service made later). A lower one is the service's newer word whatever order the answers came
  // in (the count only falls within a period), unless it was sent before the last refill.
  const rose = seen.remaining !== undefined && (record.remaining === null || seen.remaining > record.remaining);
  if (seen.remaining !== undefined && ticket.seq > record.remainingSeq && (!rose || record.remaining === null || ticket.seq > record.countSeq)) {
    if (rose) record.refillSeq = ticket.seq;
    record.remaining = seen.remaining;
    record.remainingSeq = ticket.seq;
    record.countSeq = record.seq;
    record.quotaUntil = seen.remaining === 0 ? (seen.retryAt ?? now) : 0;
  } else if (seen.remaining !== undefined && record.remaining !== null && seen.remaining < record.remaining && ticket.seq > record.refillSeq) {
    record.remaining = seen.remaining;
    record.countSeq = record.seq;
    if (seen.remaining === 0) record.quotaUntil = seen.retryAt ?? now;
  }
  switch (seen.effect) {
    case "accepted":
      if (seen.remaining === undefined && record.remaining !== null && ticket.seq > record.remainingSeq) {
        // A probe that rendered with no count: renders are back, how many is unknown. Otherwise one
        // fewer than the last count said.
        record.remaining = ticket.probe ? null : Math.max(0, record.remaining - 1);
        record.countSeq = record.seq;
      }
      noteRate(record, learn(record.sendRate, now, ticket.sentAt, false, minRate, seen.resend), seen, changes);
      break;
    case "quota_out":
      if (ticket.seq < record.remainingSeq && ticket.seq <= record.refillSeq) break; // older than a refill
      record.remaining = 0;
      record.remainingSeq = Math.max(record.remainingSeq, ticket.seq);
      record.countSeq = record.seq;
      record.quotaUntil = seen.retryAt ?? now;
      changes.push({ kind: "quota_exhausted", until: seen.retryAt });
      break;
    case "slow_down":
      noteRate(record, learn(record.sendRate, now, ticket.sentAt, true, minRate, seen.resend), seen, changes);
      break;
  }
  return changes;
}

/** A cut, as a change; `persistent` pauses every send until the 429's `Retry-After`. */
function noteRate(record: LimiterRecord, verdict: RateVerdict | undefined, seen: Observation, changes: LimiterChange[]): void {
  if (verdict?.kind === "cut") changes.push({ kind: "rate", rate: verdict.rate, limit: verdict.limit });
  else if (verdict?.kind === "persistent" && seen.retryAt !== undefined) {
    record.pauseUntil = Math.max(record.pauseUntil, seen.retryAt);
    changes.push({ kind: "paused", until: record.pauseUntil });
  }
}

/** The send rate to pace at: Infinity while unlimited. */
export function paceOf(record: LimiterRecord): number {
  return rateOf(record.sendRate);
}

/** What `client.stats()` shows of the shared part, given the sends in flight. */
export function snapshotOf(record: LimiterRecord, now: number, inFlight: number, concurrency: number): LimiterSnapshot {
  const rate = paceOf(record);
  return {
    inFlight,
    remaining: record.remaining === null ? undefined : Math.max(0, record.remaining - inFlight),
    sendRate: Number.isFinite(rate) ? rate : undefined,
    concurrency,
    pausedUntil: now < record.pauseUntil ? record.pauseUntil : undefined,
  };
}
