/**
 * The send rate a limiter learns from `rate_limited` (DESIGN §4.4). It answers one question on
 * purpose, "do the 429s depend on my send rate?", by changing the rate and comparing:
 *
 * 1. **A cut is a trial.** A phase whose answers hold clearly more 429s than the background cuts
 *    the rate to what the service accepted in it, and the cruise after it decides: clearly fewer
 *    429s keep the cut (a limit); as many undo it and make their share the background, compared
 *    with a fresh cruise rather than the phase picked for its 429s.
 * 2. **Under a limit the rate cruises a little below it and now and then probes above it**, a
 *    sequential test against the background deciding: a probe that met the limit goes back to the
 *    cruise (the limit lowered to what the probe got accepted, if lower); one that found room, at a
 *    rate the batch really sent, raises the limit, and the next probe goes twice as far at once.
 * 3. **Only answers to sends made since the phase began count** (TCP's loss episodes), so a burst
 *    of simultaneous 429s is one event; no step more than halves the rate; and a quarter of the
 *    sends refused is never background. 429s shown to be about the jobs (first sends refused,
 *    resends let through) leave only resends to tell of the rate.
 *
 * The state is a plain record, so a fleet can keep it in a shared store and every process applies
 * the same rules to it. Time is passed in; nothing here holds a timer.
 */

/** Unlimited (`free`), below the limit (`cruise`), or above it for a while (`probe`). */
type Mode = "free" | "cruise" | "probe";

/** Answers, and the 429s among them. */
interface Tally {
  answered: number;
  limited: number;
}

/** The answers to one phase's sends. */
interface Phase extends Tally {
  readonly mode: Mode;
  /** When it began, in ms: answers to sends before it are old news. */
  readonly start: number;
  accepted: number;
  /** Answers to resends (sends of jobs that waited out a `Retry-After` or a backoff), and the 429s among them. */
  resent: Tally;
  /** The earliest and the latest send answered: the span its sends took. */
  firstSentAt: number | null;
  lastSentAt: number;
  /** The earliest send answered with a 429, and the sends at or after it accepted since: the service was full. */
  fullSince: number | null;
  acceptedWhileFull: number;
  /** A probe's log-likelihood ratio: positive says "it met the limit", negative "it found room". */
  evidence: number;
}

/** The learner's state: plain data, so that it can be stored as JSON and shared. */
export interface SendRateState {
  /** Sends per second the service accepts; `null` while no limit binds (unlimited). */
  limit: number | null;
  /** How far above the limit the next probe goes, as a share of it. */
  margin: number;
  /** The limit the last whole free or cruise phase held (`null`: unlimited): what 429s about the jobs go back to. */
  held: number | null;
  /** The most sends per second the service accepted over a phase with no more 429s than the background, since the last cut: no cut goes below half of it. */
  peak: number;
  /** The answers of recent phases below any limit: their share of 429s comes whatever the rate. */
  below: Tally;
  /**
   * The last cut, until the answers after it tell whether it lowered the share of 429s: the limit
   * before the first cut of the run, the answers that made it, whether those were a cruise's
   * (`fresh`) rather than a phase picked for its 429s, and whether the share decides (a quarter
   * refused is a limit whatever comes after; only 429s about the jobs undo its cut).
   */
  trial: { before: number | null; trigger: Tally; fresh: boolean; judged: boolean } | null;
  /** 429s were shown to be about the jobs: first sends are refused for being first, and only resends tell of the rate. */
  resendsOnly?: boolean;
  phase: Phase;
}

/** What an answer changed. */
export type RateVerdict =
  /** A cut to `rate`, below the `limit` the service accepted. */
  | { readonly kind: "cut"; readonly rate: number; readonly limit: number }
  /** Most sends still got 429 at the lowest rate: every send should wait for `Retry-After`. */
  | { readonly kind: "persistent"; readonly share: number };

/** The shortest phase, in ms, and the fewest answers that end it: fewer say too little. */
const PHASE_MS = 100;
const PHASE_SENDS = 20;
/** The share of the limit the rate cruises at: below it, the service's burst allowance refills. */
const CRUISE = 0.97;
/** The first probe's margin over the limit; each probe that finds room doubles it. */
const FIRST_MARGIN = 0.1;
/** Phases' worth of time a cruise lasts before a probe (and a free phase before it starts afresh); a trial half as long. */
const CRUISES_PER_PROBE = 10;
/** How sure a decision is: the z of "clearly more 429s", and the log-likelihood ratio that ends a probe. */
const SURE = 3;
/** A share of 429s over this always comes from a limit: no service refuses one send in four at random. */
const MOSTLY = 0.25;

/** A learner with no limit known: unlimited. */
export function freshSendRate(): SendRateState {
  return {
    limit: null,
    margin: FIRST_MARGIN,
    held: null,
    peak: 0,
    below: { answered: 0, limited: 0 },
    trial: null,
    phase: newPhase("free", 0),
  };
}

/** Sends per second to pace at; Infinity while unlimited. */
export function rateOf({ limit, phase, margin }: SendRateState): number {
  if (limit === null) return Number.POSITIVE_INFINITY;
  return phase.mode === "probe" ? limit * (1 + margin) : limit * CRUISE;
}

/**
 * Tells the learner of an answer, at `now`, to the send made at `sentAt`: a 429 (`limited`) or
 * not, to a job's first send or to a resend. Changes `state` in place; returns what changed, if
 * anything. `minRate` is the lowest rate.
 */
export function learn(state: SendRateState, now: number, sentAt: number, limited: boolean, minRate: number, resend = false): RateVerdict | undefined {
  const { phase } = state;
  if (sentAt < phase.start) return undefined; // sent before the phase began: old news
  if (state.resendsOnly && !resend) return undefined;
  phase.answered++;
  phase.firstSentAt = Math.min(phase.firstSentAt ?? sentAt, sentAt);
  phase.lastSentAt = Math.max(phase.lastSentAt, sentAt);
  if (resend) {
    phase.resent.answered++;
    if (limited) phase.resent.limited++;
  }
  if (limited) {
    phase.limited++;
    phase.fullSince = Math.min(phase.fullSince ?? sentAt, sentAt);
  } else {
    phase.accepted++;
    if (phase.fullSince !== null && sentAt >= phase.fullSince) phase.acceptedWhileFull++;
  }
  // First sends refused and resends let through say the 429s are about the jobs only once a cut
  // has shown they stay at a lower rate: before one, a single caller's resends all follow a wait,
  // when a bucket has refilled. Once they are, only resends count (`byJob`).
  if (state.trial && aboutJobs(phase)) return byJob(state, now);
  if (limited && phase.answered >= PHASE_SENDS && mostly(phase) && over(phase, state.below)) return cut(state, now, minRate);
  if (phase.mode === "probe") return probed(state, now, limited);
  if (phase.answered < PHASE_SENDS || now - phase.start < PHASE_MS) return undefined;
  const trial = state.trial;
  if (trial) {
    // The cruise after a cut: clearly more 429s than made it is a limit it did not get under (cut
    // again); clearly fewer, over a whole cruise, a limit. No fewer than a phase picked for its
    // 429s says little (it was picked for them): cut again, and compare the two cruises. No fewer
    // than the cruise before is background: the rate goes back to what it was.
    if (phase.answered % PHASE_SENDS === 0 && clearlyMore(phase, trial.trigger) && measurable(phase)) return cut(state, now, minRate);
    if (now - phase.start < (CRUISES_PER_PROBE / 2) * PHASE_MS) return undefined;
    if (!trial.judged || clearlyMore(trial.trigger, phase)) state.trial = null;
    else if (!trial.fresh || share(phase) > MOSTLY) return cut(state, now, minRate);
    else {
      state.trial = null;
      state.below = { answered: trial.trigger.answered + phase.answered, limited: trial.trigger.limited + phase.limited };
      state.limit = trial.before;
      state.phase = newPhase(trial.before === null ? "free" : "cruise", now);
      return undefined;
    }
  }
  // Free and cruise phases run on, their answers pooled, until they show clearly more 429s than
  // the background (a cut), or for `CRUISES_PER_PROBE` phases' worth: then, under a limit, the
  // cruise's share is the background, and a probe is due.
  // Judged every `PHASE_SENDS` answers, not at each: a test peeked at on every answer cries wolf.
  if (phase.answered % PHASE_SENDS === 0 && over(phase, state.below) && measurable(phase)) return cut(state, now, minRate);
  if (!whole(phase, now)) return undefined;
  // What a whole phase with no more 429s than the background got accepted, the service can take.
  state.peak = Math.max(state.peak, acceptedRate(phase));
  state.held = state.limit;
  if (phase.mode === "free") {
    // Nothing changed: the sends not yet answered belong to the next phase.
    state.phase = newPhase("free", phase.lastSentAt);
    return undefined;
  }
  state.below = { answered: phase.answered, limited: phase.limited };
  state.phase = newPhase("probe", now);
  return undefined;
}

/**
 * True when the phase's first sends got clearly more 429s than its resends (three of each at
 * least; the test asks for the rest): a rate limit refuses a resend as often as a first send, so these
 * 429s are about the jobs (a service that says "come back later" to each new one), not the rate.
 */
function aboutJobs({ answered, limited, resent }: Phase): boolean {
  const first = { answered: answered - resent.answered, limited: limited - resent.limited };
  return resent.answered >= 3 && first.answered >= 3 && clearlyMore(first, resent);
}

/**
 * 429s about the jobs: the job that got one waits out its `Retry-After`, and nobody else slows.
 * From now on only resends tell of the rate (their share is the background), until they are
 * refused enough to cut: then it is a limit, and first sends count again. The rate goes back to
 * what the last whole phase held: every cut made since may have been for them, not only one still
 * on trial (the first of them cut again and again before any resend could answer).
 */
function byJob(state: SendRateState, now: number): RateVerdict | undefined {
  const { phase } = state;
  state.below = { ...phase.resent };
  state.resendsOnly = true;
  state.limit = state.held ?? null; // a record written before `held` was kept has none
  state.trial = null;
  state.phase = newPhase(state.limit === null ? "free" : "cruise", now);
  return undefined;
}

/** True when `a` holds clearly more 429s than `b` (a two-proportion z-test). */
function clearlyMore(a: Tally, b: Tally): boolean {
  const pooled = (a.limited + b.limited) / (a.answered + b.answered);
  const spread = Math.sqrt(pooled * (1 - pooled) * (1 / a.answered + 1 / b.answered));
  return spread > 0 && a.limited / a.answered - b.limited / b.answered >= SURE * spread;
}

/**
 * Weighs a probe's answer: "it met the limit" (the 429s a limit at the last one leaves at the
 * probe's rate, over the share below it) against "it found room" (the share below it).
 */
function probed(state: SendRateState, now: number, limited: boolean): RateVerdict | undefined {
  const { phase } = state;
  const limit = state.limit as number;
  const below = share(state.below);
  phase.evidence += weigh(limited, below + ((1 - below) * state.margin) / (1 + state.margin), below);
  // Taking a probe's 429s for the limit costs little (the rate stays where the cruise had it, and
  // the next probe asks again): it takes half the evidence, and no more answers than that.
  if (phase.evidence >= SURE / 2) {
    // What a probe that really sent past the limit got accepted while the service was full is the
    // limit where that is lower (a cruise that was over it all along), at least half of it.
    if (measurable(phase) && sendRate(phase) >= limit) state.limit = Math.min(limit, Math.max(acceptedRate(phase), limit / 2));
    state.margin = FIRST_MARGIN;
    state.phase = newPhase("cruise", now);
    return undefined;
  }
  // Room takes `PHASE_SENDS` answers over `PHASE_MS` at least: fewer, sooner, a burst allowance may hide a limit.
  if (phase.evidence > -SURE || phase.answered < PHASE_SENDS || span(phase) < PHASE_MS) {
    // Undecided for as long as a cruise lasts, its share sits between room and the limit: it goes
    // back to the cruise, as a probe that met the limit does. Every phase ends.
    if (!whole(phase, now)) return undefined;
    state.margin = FIRST_MARGIN;
    state.phase = newPhase("cruise", now);
    return undefined;
  }
  const sent = sendRate(phase);
  state.peak = Math.max(state.peak, acceptedRate(phase));
  if (sent >= limit) {
    // Room, at a rate over the limit that the batch really sent: the limit is the probe's, and the
    // next probe goes twice as far, at once.
    state.limit = limit * (1 + state.margin);
    state.margin = Math.min(1, 2 * state.margin);
    state.phase = newPhase("probe", now);
    return undefined;
  }
  // The batch did not send past the limit: the probe says nothing of it (the rate grows only with demand).
  state.margin = FIRST_MARGIN;
  state.phase = newPhase("cruise", now);
  return undefined;
}

/**
 * Cuts to what the service accepted in the phase, never below half the rate, and puts the cut on
 * trial unless a quarter of the phase's sends were refused (no background is that). A phase that
 * refused that many at the lowest rate says that slowing down does not help: every send should wait.
 */
function cut(state: SendRateState, now: number, minRate: number): RateVerdict {
  const { phase } = state;
  const paced = rateOf(state);
  // Unlimited, the rate a cut may halve is what the batch sent (sends made at once, as if over
  // `PHASE_MS`). Nor does it go below half the most the service accepted since the last cut: a
  // batch whose jobs wait out their Retry-After sends less than the service would take.
  const before = Number.isFinite(paced) ? paced : (phase.answered * 1000) / Math.max(PHASE_MS, span(phase));
  const refused = share(phase);
  const floor = Math.max(before, state.peak) / 2;
  const limit = Math.max(minRate / CRUISE, Math.min(paced, Math.max(acceptedRate(phase), floor)));
  state.peak = 0;
  state.margin = FIRST_MARGIN;
  state.resendsOnly = false; // resends refused too: a limit, which first sends tell of as well
  // Mostly 429s are a limit whatever else comes; fewer are on trial. A phase picked for its 429s
  // holds more than its share by chance: it is judged as if it held only as many as picking needs
  // above the background, so that a cruise at the background after it does not prove a limit.
  const fresh = state.trial !== null && phase.mode === "cruise";
  const p = background(state.below);
  const picked = fresh ? 0 : SURE * Math.sqrt(phase.answered * p * (1 - p));
  const trigger = { answered: phase.answered, limited: Math.max(0, phase.limited - picked) };
  state.trial = { before: state.trial ? state.trial.before : state.limit, trigger, fresh, judged: refused <= MOSTLY };
  // A limit read off fewer accepted sends than a phase's (and not held up by the floor) is a
  // guess that errs low: a probe at once.
  const guess = refused > MOSTLY && phase.accepted < PHASE_SENDS && acceptedRate(phase) > floor;
  state.phase = newPhase(guess ? "probe" : "cruise", now);
  if (refused > MOSTLY && state.limit !== null && state.limit <= minRate / CRUISE) return { kind: "persistent", share: refused };
  state.limit = limit;
  return { kind: "cut", rate: rateOf(state), limit };
}

/** True when clearly more than `MOSTLY` of the phase's answers were 429s (a one-sided binomial test). */
function mostly({ answered, limited }: Tally): boolean {
  return limited - answered * MOSTLY >= SURE * Math.sqrt(answered * MOSTLY * (1 - MOSTLY));
}

/** True when `phase` holds clearly more 429s than the background share (a one-sided binomial test). */
function over({ answered, limited }: Tally, below: Tally): boolean {
  const p = background(below);
  return limited >= 2 && limited - answered * p >= SURE * Math.sqrt(answered * p * (1 - p));
}

/**
 * The share of 429s that comes whatever the rate, read off `below`: a share never seen in n answers
 * counts as one in n (with a phase's answers added, so that a fresh learner does not take a first
 * 429 for a limit).
 */
function background(below: Tally): number {
  return Math.max(share(below), 1 / (below.answered + PHASE_SENDS));
}

/** The log-likelihood ratio one answer adds for a share `ifMet` against a share `ifRoom`. */
function weigh(limited: boolean, ifMet: number, ifRoom: number): number {
  const a = clamp(ifMet);
  const b = clamp(ifRoom);
  return limited ? Math.log(a / b) : Math.log((1 - a) / (1 - b));
}

const clamp = (p: number) => Math.min(0.99, Math.max(0.01, p));

const share = (tally: Tally) => (tally.answered === 0 ? 0 : tally.limited / tally.answered);

/**
 * Sends per second the service accepted in `phase`: from its first 429 on (before it, a burst
 * allowance may have let more through than the limit), where that spans `PHASE_MS`; else over the
 * span of its sends, `PHASE_MS` at least, and one send at least: a phase that got nothing through
 * says the rate is under one per its span, not zero.
 */
function acceptedRate(phase: Phase): number {
  const full = phase.fullSince === null ? 0 : phase.lastSentAt - phase.fullSince;
  if (full >= PHASE_MS && phase.acceptedWhileFull > 0) return (phase.acceptedWhileFull * 1000) / full;
  return (Math.max(1, phase.accepted) * 1000) / Math.max(PHASE_MS, span(phase));
}

/** True once `phase` has lasted a whole cruise: `CRUISES_PER_PROBE` phases' worth of time, and half as many of answers. */
const whole = (phase: Phase, now: number) => now - phase.start >= CRUISES_PER_PROBE * PHASE_MS && phase.answered >= (CRUISES_PER_PROBE / 2) * PHASE_SENDS;

/** True once the service has refused for `PHASE_MS` of sends: long enough to read what it accepts while full. */
const measurable = (phase: Phase) => phase.fullSince !== null && phase.lastSentAt - phase.fullSince >= PHASE_MS;

/** Milliseconds between the first and the last send of `phase` answered. */
const span = (phase: Phase) => phase.lastSentAt - (phase.firstSentAt ?? phase.lastSentAt);

/** Sends per second the batch made in `phase`, as the times of the sends answered tell: 0 for one. */
function sendRate(phase: Phase): number {
  return span(phase) > 0 ? ((phase.answered - 1) * 1000) / span(phase) : 0;
}

function newPhase(mode: Mode, start: number): Phase {
  return { mode, start, answered: 0, limited: 0, accepted: 0, resent: { answered: 0, limited: 0 }, firstSentAt: null, lastSentAt: start, fullSince: null, acceptedWhileFull: 0, evidence: 0 };
}
