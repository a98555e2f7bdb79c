import { WindowCounter } from "../../util/window-counter.js";

/** The circuit breaker's state: `closed` sends, `open` refuses, `half_open` lets one probe through. */
export type CircuitState = "closed" | "open" | "half_open";

/** A run of breaker failures: what the spec asks to be reported (rule 4). */
export interface FailureRun {
  readonly count: number;
  /** Milliseconds since the epoch. */
  readonly firstAt: number;
  readonly lastAt: number;
  /** Failures by code. */
  readonly codes: Readonly<Record<string, number>>;
  /** Up to five distinct messages, first seen first. */
  readonly messages: readonly string[];
}

export interface BreakerSettings {
  readonly consecutiveFailures: number;
  readonly failureRatio: number;
  readonly minimumVolume: number;
  readonly window: number;
  readonly openTime: number;
  readonly maxOpenTime: number;
}

/** What a send may do now. */
export type Admission =
  | { readonly kind: "send" }
  | { readonly kind: "probe" }
  /** Open until `until`; or half-open with the probe in flight (`until` undefined). */
  | { readonly kind: "blocked"; readonly until: number | undefined };

const SEND: Admission = Object.freeze({ kind: "send" });
const PROBE: Admission = Object.freeze({ kind: "probe" });
const PROBE_IN_FLIGHT: Admission = Object.freeze({ kind: "blocked", until: undefined });

/** How a send counted. */
export type Verdict = "success" | "failure" | "neutral";

/** A change of state that the policy reports. */
export type Transition =
  | { readonly to: "open"; readonly run: FailureRun; readonly openMs: number; readonly reopened: boolean }
  | { readonly to: "closed"; readonly run: FailureRun | undefined };

/** How many of the latest sends' outcomes are kept, by send order, to count runs in. */
const SENDS_KEPT = 1024;
const IN_FLIGHT = 0;
const SUCCEEDED = 1;
const FAILED = 2;
const NEUTRAL = 3;

/**
 * The circuit breaker's state machine, with time passed in: closed, open until a time, then
 * half-open with room for one probe. Opens on `consecutiveFailures` in a row (more where the
 * window's scattered failures make such runs by chance, see `runThatOpens`), or on a failure
 * ratio over a rolling window once `minimumVolume` sends were seen; each failed probe doubles the
 * open time up to `maxOpenTime`.
 *
 * "In a row" is in the order the sends left, as the service saw them, not the order their answers
 * came: a failure often comes back sooner than a render (a reset or a 500 against seconds of
 * rendering), so answers in the order they come bunch failures together that other sends, still
 * rendering, stood between. A run is failed sends next to each other in send order, all answered;
 * a send between them still in flight ends it, and one that counted neither way is skipped.
 */
export class BreakerState {
  private state: CircuitState = "closed";
  private openUntil = 0;
  private openMs: number;
  private probing = false;
  /** The number of the latest send, and the outcome of the last `SENDS_KEPT` by number. */
  private lastSent = 0;
  private readonly sentNumbers = new Float64Array(SENDS_KEPT).fill(-1);
  private readonly outcomes = new Uint8Array(SENDS_KEPT);
  /** Sends up to this number went out before the breaker last closed: their run was reported. */
  private runFloor = 0;
  private readonly sends: WindowCounter;
  private readonly failures: WindowCounter;
  private run: MutableRun | undefined;
  private openCount = 0;
  /** The failures among the other sends of the window, last time there were enough to tell a share. */
  private around: { readonly failures: number; readonly sends: number; readonly at: number } | undefined;

  constructor(private readonly settings: BreakerSettings) {
    this.openMs = settings.openTime;
    this.sends = new WindowCounter(settings.window);
    this.failures = new WindowCounter(settings.window);
  }

  /** Times the breaker opened, reopenings after a failed probe included. */
  get openings(): number {
    return this.openCount;
  }

  current(now: number): CircuitState {
    if (this.state === "open" && now >= this.openUntil) {
      this.state = "half_open";
      this.probing = false;
    }
    return this.state;
  }

  admit(now: number): Admission {
    const state = this.current(now);
    if (state === "closed") return SEND;
    if (state === "open") return { kind: "blocked", until: this.openUntil };
    if (this.probing) return PROBE_IN_FLIGHT;
    this.probing = true;
    return PROBE;
  }

  /** A send leaves now: its number, in the order sends leave, for `record`. */
  sent(): number {
    const number = ++this.lastSent;
    const slot = number % SENDS_KEPT;
    this.sentNumbers[slot] = number;
    this.outcomes[slot] = IN_FLIGHT;
    return number;
  }

  /**
   * Records the verdict on send `number` (from `sent`; a send it never saw counts as leaving now);
   * `probe` says whether it was the half-open probe.
   */
  record(verdict: Verdict, now: number, probe: boolean, number = this.sent(), code = "", message = ""): Transition | undefined {
    if (probe) this.probing = false;
    const slot = this.slotOf(number);
    if (slot !== undefined) this.outcomes[slot] = verdict === "success" ? SUCCEEDED : verdict === "failure" ? FAILED : NEUTRAL;
    if (verdict === "neutral") return undefined;
    if (verdict === "success") {
      this.sends.add(now);
      if (probe && this.state === "half_open") return this.close();
      // A run ends once a whole window passes without a failure.
      if (this.state === "closed" && this.failures.total(now) === 0) this.run = undefined;
      return undefined;
    }
    this.sends.add(now);
    this.failures.add(now);
    this.run = addToRun(this.run, now, code, message);
    if (probe && this.state === "half_open") {
      this.openMs = Math.min(this.openMs * 2, this.settings.maxOpenTime);
      return this.open(now, true);
    }
    if (this.state === "closed" && this.tripped(now, number)) return this.open(now, false);
    return undefined;
  }

  private tripped(now: number, failed: number): boolean {
    const volume = this.sends.total(now);
    const failures = this.failures.total(now);
    const inRow = this.failedInRow(failed);
    const { consecutiveFailures, minimumVolume, failureRatio, window } = this.settings;
    // The window's sends outside this run, once there are enough of them to tell a share; else
    // the last share told, for a window's time (the window starts empty when the breaker closes).
    if (volume - inRow >= minimumVolume) this.around = { failures: failures - inRow, sends: volume - inRow, at: now };
    const around = this.around && now - this.around.at <= window ? this.around : undefined;
    const opensAt = around ? runThatOpens(consecutiveFailures, around.failures, around.sends) : consecutiveFailures;
    if (inRow >= opensAt) return true;
    return volume >= minimumVolume && failures / volume >= failureRatio;
  }

  /** The failed sends in the run that send `failed` belongs to, in send order. */
  private failedInRow(failed: number): number {
    let count = 0;
    for (let number = failed; number > this.runFloor; number--) {
      const outcome = this.outcomeOf(number);
      if (outcome === FAILED) count++;
      else if (outcome !== NEUTRAL) break;
    }
    for (let number = failed + 1; number <= this.lastSent; number++) {
      const outcome = this.outcomeOf(number);
      if (outcome === FAILED) count++;
      else if (outcome !== NEUTRAL) break;
    }
    return count;
  }

  /** The outcome of send `number`; one no longer kept ends a run, as one in flight does. */
  private outcomeOf(number: number): number {
    const slot = this.slotOf(number);
    return slot === undefined ? IN_FLIGHT : this.outcomes[slot]!;
  }

  /** Where send `number`'s outcome is kept, while it still is. */
  private slotOf(number: number): number | undefined {
    const slot = number % SENDS_KEPT;
    return this.sentNumbers[slot] === number ? slot : undefined;
  }

  private close(): Transition {
    const run = this.run && freeze(this.run);
    this.runFloor = this.lastSent;
    this.state = "closed";
    this.openMs = this.settings.openTime;
    this.run = undefined;
    this.sends.reset();
    this.failures.reset();
    return { to: "closed", run };
  }

  private open(now: number, reopened: boolean): Transition {
    this.state = "open";
    this.openUntil = now + this.openMs;
    this.openCount++;
    return { to: "open", run: freeze(this.run ?? addToRun(undefined, now, "", "")), openMs: this.openMs, reopened };
  }
}

/**
 * The odds at or under which a run of failures is taken for more than the scattered failures
 * around it: once in 20 windows of `CHANCE_RUN_SENDS` sends, or of the window's sends if more.
 */
const CHANCE_RUN_ODDS = 0.05;
const CHANCE_RUN_SENDS = 1000;

/**
 * The failures in a row that open the breaker: `consecutive`, or more where the window's other
 * sends fail often enough to make such runs by chance. Among `sends` of which `failures` failed
 * (share p), a run of k turns up by chance with odds of about sends x p^k; the run that opens is
 * the shortest whose odds are at most `CHANCE_RUN_ODDS`. A service that resets three renders in
 * ten, all else well, makes runs of five about twice in a thousand sends: opening on them would
 * stop every send for a second or more and change nothing of the share (9 in a row open it there;
 * 5 still do at one in ten). An outage after a quiet spell still opens on `consecutive`, and so
 * does one among sends that all failed too.
 */
export function runThatOpens(consecutive: number, failures: number, sends: number): number {
  const share = failures / sends;
  if (!(share > 0 && share < 1)) return consecutive;
  const odds = CHANCE_RUN_ODDS / Math.max(sends, CHANCE_RUN_SENDS);
  return Math.max(consecutive, Math.ceil(Math.log(odds) / Math.log(share)));
}

interface MutableRun {
  count: number;
  firstAt: number;
  lastAt: number;
  codes: Record<string, number>;
  messages: string[];
}

function addToRun(run: MutableRun | undefined, now: number, code: string, message: string): MutableRun {
  const next = run ?? { count: 0, firstAt: now, lastAt: now, codes: {}, messages: [] };
  next.count++;
  next.lastAt = now;
  next.codes[code] = (next.codes[code] ?? 0) + 1;
  if (message && next.messages.length < 5 && !next.messages.includes(message)) next.messages.push(message);
  return next;
}

function freeze(run: MutableRun): FailureRun {
  return Object.freeze({ ...run, codes: Object.freeze({ ...run.codes }), messages: Object.freeze([...run.messages]) });
}
