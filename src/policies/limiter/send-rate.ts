import { type Curve, CurveShape } from "./rate-curve.js";
import { clearlyHigher, type Evidence, judge, MIN_JUDGED, rose, significant } from "./share-tests.js";
import { TimeBuckets } from "../time-buckets.js";

/**
 * The send rate a limiter learns from `rate_limited` (DESIGN §4.4). Unlimited until the service
 * shows a limit; it must never make a batch slower than a plain retry loop.
 *
 * - **Episodes, as TCP counts losses.** Only 429s to sends made after the last cut count, so a
 *   burst of simultaneous 429s is one event. An episode opens when the share of 429s over the last
 *   second is clearly above the background share (a one-sided binomial test). In a fresh
 *   learner's first `PEAK_SPAN_MS` (connections still opening, so what the service accepts is what
 *   the client managed) only a share over `MAX_BACKGROUND` (over the last second or since the
 *   first 429) or a run of 429s opens one.
 * - **The cut, from what the service accepted** (BBR's delivery rate). The rate slows at once to a
 *   little below what was accepted over the last `EPISODE_MS` (or since the sends began, if that
 *   is sooner: time before them says nothing of the rate; the sends the answers are of, not new
 *   ones sent too recently to be answered), and is set once the episode has been
 *   measured that long: a little below what the service accepted between its first and its last
 *   429, while it was full. No cut goes below half of the smaller of the rate before and the recent
 *   peak goodput; a cut held there, above the goodput measured, is cut again toward that goodput
 *   as soon as the 429s at it show a limit there (`stillOver`). A limit of a few per second gives
 *   too few sends to time in `EPISODE_MS`: the episode then lasts up to a second, and accepted
 *   sends too few to time count as if spread over it (an estimate that errs low, which the climb
 *   back makes up), or over the time since a fresh learner's first send, where that is shorter
 *   (at least `EPISODE_MS`, and for `MIN_TIMED` of them or more; the peak the floor halves too): a
 *   batch that meets a limit within its first sends had no second to send in.
 * - **Every cut is a trial.** A real limit answers a slower rate with fewer 429s (or, if the limit
 *   came down meanwhile, more). When the answers after a cut fit an unchanged share better than
 *   what a real limit at the measured goodput predicts (or still fit neither better after a whole
 *   second, with 429s clearly above the background), twice in a row, the 429s have nothing to do
 *   with the rate (the unchanged share is the last second's, unless the episode's own shows a
 *   limit: an episode opened on a cluster of scattered 429s overstates them): the cuts are undone
 *   and the share is learned as background, which no longer cuts (it fades, so a real limit
 *   mistaken for it shows again). Where resends, which waited out
 *   their `Retry-After`, are accepted clearly more often than first sends, the 429s are about the
 *   jobs, not the rate: background at once. A share over `MAX_BACKGROUND` is never background: a
 *   limit the cuts did not get under yet. A trial reads every answer after its cut, however long
 *   they take (under a low limit, a second holds too few); until it is decided the cut holds its
 *   rate (a climb toward a limit measured a little high, or a probe above it, would blur it), but
 *   a share that clearly rises after the cut (the limit came down again) decides at once, and one
 *   still undecided after a second with not one 429 since ends as a cut that helped. A probe above
 *   the limit also takes for background the share of 429s that sends held below it got
 *   (`backgroundAt`): at a few dozen sends a second, no trial tells scattered 429s from a limit's,
 *   and a probe meets two within a second before it gets far. Each job still waits out its own
 *   `Retry-After`. If nearly every send after a cut still gets 429, every send should wait (the
 *   limiter pauses).
 * - **Recovery, CUBIC's shape.** After a cut the rate climbs back to the measured limit, fast at
 *   first and flat near it (within `recovery` after a cut that halved it, sooner after a shallower
 *   one), then probes above it: slowly, then doubling once `PROBE_MARGIN` above it with no 429, so
 *   a limit that drops and comes back is followed both ways. An episode that opens on a probe
 *   steps back at once to the highest of the last limit, half the probe and what was accepted over
 *   the last second, not to what the service's burst allowance let through in the last moments;
 *   if the service then accepts nearly all that is sent at that rate (or nearly all its answers,
 *   when the batch sent less), the limit is that rate (the episode's accepted rate, which it
 *   capped, would cut twice; what a batch that sent less got accepted would cut far below it).
 *   Far above its last limit it is unlimited again. A cut held at the floor (still above what was
 *   accepted) stays flat instead. Under a limit below half the highest goodput of the last
 *   `REMEMBER_MS`, or one its episode could only guess (its 429s stopped early among many answers,
 *   the jobs that got them holding their places), the climb and the wait before probing take half
 *   as long: a limit that fell that far (a service shedding load) may come back, a guess errs low,
 *   and the sooner a probe finds out, the less a batch loses. The curve moves only while the
 *   batch sends (as Linux's CUBIC stands still while a TCP sender is idle): a pause longer than
 *   `IDLE_SENDS` sends at the rate (and `EPISODE_MS`) holds it where the last sends left it.
 *
 * Sends draw tokens from a bucket that holds 20 ms worth, so they go out evenly, not in bursts.
 */
export interface SendRateSettings {
  /** Share of the estimated limit that a cut sets the rate to. */
  readonly decrease: number;
  /** Milliseconds the rate takes to climb back to the estimated limit after a cut that halved it. */
  readonly recovery: number;
  /** Lowest rate, in sends per second. */
  readonly minRate: number;
}

/** What an answer did to the rate. */
export type RateVerdict =
  /** A real limit: the rate was cut to `rate`, below the `limit` the service accepted. */
  | { readonly kind: "cut"; readonly rate: number; readonly limit: number }
  /** The last cut did not lower the share of 429s: it is undone, and `share` is background. */
  | { readonly kind: "background"; readonly share: number }
  /** Nearly every send after a cut still got 429: every send should wait for `Retry-After`. */
  | { readonly kind: "persistent"; readonly share: number };

const BUCKET_MS = 50;
/** Accepted sends are kept this long, for the peak goodput. */
const HISTORY_MS = 2_000;
/** 429 shares are judged over responses this recent (and to sends after the last cut). */
const EVIDENCE_MS = 1_000;
/**
 * How long an episode is measured before its cut, and the least span of 429s that times a goodput:
 * 429s that stop early in an episode stopped because the jobs that got them wait (a batch's places
 * hold them), not because the service had room; the few sends accepted meanwhile time nothing.
 */
const EPISODE_MS = 100;
const MIN_FULL_MS = 50;
/** Accepted sends that time a goodput over `EPISODE_MS`; fewer, and it is read over `EVIDENCE_MS`. */
const MIN_ACCEPTED = 10;
/** The least accepted sends that time a limit while the service was full; fewer, and a cut uses `goodput()`. */
const MIN_TIMED = 3;
/** The span a peak goodput is read on: long enough that a service's burst allowance does not inflate it. */
const PEAK_SPAN_MS = 250;
/** How long after a cut its trial is first judged, in milliseconds. */
const TRIAL_MS = 200;
/** The half-life of a learned background, in milliseconds: it is tried again now and then. */
const LEARNED_HALF_LIFE_MS = 20_000;
/** A share of 429s after a cut at or over this pauses every send. */
const PERSISTENT_SHARE = 0.8;
/** The most 429s taken for background: more come from a limit. */
const MAX_BACKGROUND = 0.5;
/** Held answers counted, about: past this many, the count halves, so the share follows the service. */
const HELD_ANSWERS = 400;
/** Accepted answers a held share is weighed with, so that one 429 among a few answers is not a share. */
const HELD_PRIOR = 30;
/**
 * The fewest held 429s (clusters counting once) that make a share: a limit refuses a send held a
 * little below it now and then (its burst allowance spent), and a probe that took one such 429
 * for background would meet the limit with more 429s.
 */
const HELD_LIMITED = 2;
/** Responses in a window that moves the background share toward its own. */
const WINDOW_ANSWERS = 100;
/**
 * What a service that accepts "nearly all" accepts: that share of a step back's rate, or of an
 * episode's answers (the 429 that opened it among them, so one in ten passes).
 */
const NEARLY_ALL = 0.9;
/** 429s in a row that no background gives: a limit (a 5 % background gives one such run in millions). */
const LIMITED_RUN = 5;
/** The share of 429s a limit leaves at a rate held far enough above it to cut again without an episode. */
const HELD_FAR = 1 / 3;
/** How long the highest goodput a cut saw is remembered, in milliseconds. */
const REMEMBER_MS = 30_000;
/** The stretch of the climb under a limit below half the highest goodput remembered. */
const QUICK_STRETCH = 0.5;
/** Far above its last limit (this many times) the rate is unlimited again. */
const UNLIMITED_AT = 10;
/** A gap between sends longer than this many sends at the rate (and than `EPISODE_MS`) is idle. */
const IDLE_SENDS = 4;

/**
 * An episode being measured, from its first 429 on. The service was full from `start` to
 * `lastLimitedAt`, so what it accepted in between is its limit.
 */
interface Episode {
  readonly start: number;
  /** The curve before the episode, and its rate then. */
  readonly before: Curve | undefined;
  readonly rateBefore: number;
  /** What the service accepted just before it, the estimate until the episode measures better. */
  readonly goodputBefore: number;
  /** The rate a probe stepped back to when the episode opened on it: the sends it measures went out at that rate or slower. */
  readonly steppedBackTo: number | undefined;
  lastLimitedAt: number;
  accepted: number;
  /** `accepted` when the last 429 came. */
  acceptedWhileFull: number;
  answered: number;
  limited: number;
  /** The longest run of 429s in a row it saw. */
  longestRun: number;
}

/** The last cut, until the sends after it say whether it helped. */
interface Trial {
  /** The curve before the cut, restored if it did not help. */
  readonly before: Curve | undefined;
  /** The rate the cut set, held until the trial is decided. */
  readonly rate: number;
  /** The share of 429s in the episode that made the cut, and its responses. */
  readonly share: number;
  readonly answered: number;
  /** The share a real limit at the goodput measured leaves at the new rate. */
  readonly expected: number;
  /** The answers to sends after the cut, however long it takes them to come (a low limit is slow). */
  readonly after: { answered: number; limited: number };
  /**
   * Set when the cut was held at the floor, above the goodput its episode measured: that goodput.
   * 429s still clearly coming at the held rate, as a limit there would give, cut again toward it.
   */
  readonly heldAbove: number | undefined;
  /** Said persistent once already. */
  paused?: boolean;
}

export class SendRate {
  private curve: Curve | undefined;
  private readonly curves: CurveShape;
  private tokens = 0;
  private tokensAt = 0;
  /** Sends before it are old news: the last cut, or the start. */
  private phaseStart = Number.NEGATIVE_INFINITY;
  /**
   * When the sends now going out began, after a pause, and when those before it began: goodput is
   * measured from then at most (see `timedSince`).
   */
  private busySince = Number.NEGATIVE_INFINITY;
  private busyBefore = Number.NEGATIVE_INFINITY;
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private firstSentAt: number | undefined;
  /** Answers in a row that were 429s, up to now. */
  private limitedRun = 0;
  /** In the warm-up, the answers since its first 429 and the 429s among them. */
  private sinceFirstLimited: { answered: number; limited: number } | undefined;
  private episode: Episode | undefined;
  private trial: Trial | undefined;
  /** A trial whose share did not move: the first of the two an undo needs, and what it undoes. */
  private doubted: Trial | undefined;
  /** The share of 429s recent windows saw, at most the `learned` share a trial proved background. */
  private background = 0;
  private learned = 0;
  private learnedAt = 0;
  /** The highest goodput over a second that a cut saw lately, and when: a limit far below it may come back. */
  private highest = { limit: 0, at: Number.NEGATIVE_INFINITY };
  private window = { answered: 0, limited: 0 };
  /** Answers to sends held below the limit measured, and the 429s among them (`countHeld`). */
  private held = { answered: 0, limited: 0 };
  private heldLimitedAt = Number.NEGATIVE_INFINITY;
  private readonly accepted = new TimeBuckets(BUCKET_MS, HISTORY_MS);
  private readonly answered = new TimeBuckets(BUCKET_MS, HISTORY_MS);
  private readonly limited = new TimeBuckets(BUCKET_MS, HISTORY_MS);
  private readonly resent = new TimeBuckets(BUCKET_MS, HISTORY_MS);
  private readonly resentLimited = new TimeBuckets(BUCKET_MS, HISTORY_MS);

  constructor(private readonly settings: SendRateSettings) {
    this.curves = new CurveShape(settings.recovery, settings.minRate);
  }

  /** Sends per second at `now`; Infinity while unlimited. */
  rateAt(now: number): number {
    if (!this.curve) return Number.POSITIVE_INFINITY;
    const rate = this.curves.rateAt(this.curve, Math.min(now, this.idleFrom(this.curve)));
    // A cut on trial holds its rate: the answers judge that rate, not a climb toward a limit that
    // was measured high (nor a probe above it), whose 429s would make it look as if it did not help.
    return this.trial ? Math.min(rate, this.trial.rate) : rate;
  }

  /** The share of 429s learned as background: they come whatever the rate. */
  get backgroundShare(): number {
    return this.background;
  }

  /**
   * Takes a token: 0 when a send may go now, else the milliseconds until one may. `share`: the part
   * of the rate this pace may use (a process of a fleet, pacing on its own, takes its part of the
   * fleet's).
   */
  take(now: number, share = 1): number {
    const rate = Math.max(this.settings.minRate, this.paceAt(now) * share);
    if (Number.isFinite(rate)) {
      const capacity = Math.max(1, rate / 50); // 20 ms worth of sends
      this.tokens = Math.min(capacity, this.tokens + ((now - this.tokensAt) * rate) / 1000);
      this.tokensAt = now;
      if (this.tokens < 1) return Math.ceil(((1 - this.tokens) * 1000) / rate);
      this.tokens -= 1;
    }
    this.sent(now);
    return 0;
  }

  /**
   * The rate sends are paced at now: `rateAt`, or unlimited again once it is far above its last
   * limit. For a pace kept elsewhere (a fleet's, in Redis), which then calls `sent` for the sends
   * it knows of.
   */
  paceAt(now: number): number {
    const rate = this.rateAt(now);
    if (!this.curve || rate < this.curve.limit * UNLIMITED_AT) return rate;
    this.curve = undefined;
    return Number.POSITIVE_INFINITY;
  }

  /**
   * A send went out at `now`: goodput is measured from when the sends now going out began. One
   * older than the last told of (another process's, told late) changes nothing.
   */
  sent(now: number): void {
    this.firstSentAt ??= now;
    if (this.curve) {
      const idle = now - this.idleFrom(this.curve);
      if (idle > 0) this.curve = { ...this.curve, at: this.curve.at + idle }; // back from a pause: the curve goes on
    }
    if (now - this.lastSentAt > EPISODE_MS) {
      this.busyBefore = this.busySince === Number.NEGATIVE_INFINITY ? now : this.busySince; // none before the first
      this.busySince = now;
    }
    this.lastSentAt = Math.max(this.lastSentAt, now);
  }

  /**
   * The service accepted the send made at `sentAt` (it rendered, or failed on its own merits);
   * `resend` when it was a job's resend rather than its first send.
   */
  accept(now: number, sentAt: number, resend = false): RateVerdict | undefined {
    return this.answer(now, sentAt, false, resend);
  }

  /** The send made at `sentAt` got `rate_limited`. */
  limit(now: number, sentAt: number, resend = false): RateVerdict | undefined {
    return this.answer(now, sentAt, true, resend);
  }

  /**
   * When the sends stopped, for the curve: it stands still from then until the next send. A climb
   * or a probe no send tested says nothing of the service: a batch back from a pause (its jobs
   * waiting out a `Retry-After`, or a fleet's process alone once Redis is away) goes on from the
   * rate it last sent at.
   */
  private idleFrom(curve: Curve): number {
    if (this.lastSentAt === Number.NEGATIVE_INFINITY) return Number.POSITIVE_INFINITY;
    const rate = this.curves.rateAt(curve, this.lastSentAt);
    return this.lastSentAt + Math.max(EPISODE_MS, (IDLE_SENDS * 1000) / rate);
  }

  private answer(now: number, sentAt: number, limited: boolean, resend: boolean): RateVerdict | undefined {
    // An episode measured long enough is cut on what it saw before this answer, which may come late.
    const measured = this.episode && this.measured(now, this.episode) ? this.cut(now, this.episode) : undefined;
    this.limitedRun = limited ? this.limitedRun + 1 : 0;
    this.countWarmUp(now, limited);
    if (!limited) this.accepted.add(now);
    if (sentAt < this.phaseStart) return measured; // sent before the last cut took hold: old news
    this.answered.add(now);
    if (limited) this.limited.add(now);
    if (resend) this.resent.add(now);
    if (resend && limited) this.resentLimited.add(now);
    this.follow(now, limited);
    // The rate now, read once: what counts as held and a probe's background both go by it.
    const rate = this.rateAt(now);
    this.countHeld(now, rate, limited);
    // The last second's share of 429s speaks only to a 429 or to a cut on trial: an accepted send
    // with nothing on trial does not read it (its two sums cost more than the rest of an answer).
    const evidence: Evidence | undefined =
      limited || this.trial
        ? { answered: this.answered.sum(now, EVIDENCE_MS), limited: this.limited.sum(now, EVIDENCE_MS) }
        : undefined;
    const clear = evidence !== undefined && significant(evidence, this.backgroundAt(rate));
    if (clear && limited) {
      const history = this.byHistory(now, evidence);
      if (history) return history;
    }
    let trial = this.trial;
    if (trial) {
      const after = trial.after;
      after.answered++;
      if (limited) after.limited++;
      if (!trial.paused && after.answered >= MIN_JUDGED && after.limited >= PERSISTENT_SHARE * after.answered) {
        // Nearly every send after the cut still gets 429: slowing down does not help, waiting does.
        trial.paused = true;
        return { kind: "persistent", share: after.limited / after.answered };
      }
    }
    if (trial?.heldAbove !== undefined && clear && limited && stillOver(trial)) return this.recut(now, trial, trial.heldAbove);
    // A limit that came down meanwhile shows at once: the share rises clearly.
    const early = trial !== undefined && limited && rose(trial.after, trial.share);
    const verdict = trial && (early || now - this.phaseStart >= TRIAL_MS) ? this.verdictOn(now, trial) : undefined;
    // A cut whose episode's share was too small to judge (a cut and no cut predict the same), or
    // whose rate is too low to give `MIN_JUDGED` answers soon, with not one 429 after it for a
    // whole evidence window, ends as one that helped: held, the rate would not climb again.
    const quiet = trial !== undefined && !clear && trial.after.limited === 0 && now - this.phaseStart >= EVIDENCE_MS;
    if (verdict === "real" || quiet) {
      this.trial = trial = undefined;
      this.doubted = undefined;
      if (this.curve) this.curve = this.curves.released(this.curve, now);
    } else if (trial && verdict === "background" && clear) {
      // A share that did not move may come from a cut too shallow to get under a real limit, or
      // from a limit that moved meanwhile: it is taken for background when the next cut does not
      // move it either.
      if (this.doubted) return this.undo(now, this.doubted, trial.after);
      this.doubted = trial;
      this.trial = trial = undefined;
    }
    const episode = this.episode;
    if (episode) {
      episode.answered++;
      if (limited) {
        episode.limited++;
        episode.longestRun = Math.max(episode.longestRun, this.limitedRun);
        episode.lastLimitedAt = now;
        episode.acceptedWhileFull = episode.accepted;
      } else {
        episode.accepted++;
      }
    } else if (clear && limited && !trial && !this.warmingUp(now, evidence)) {
      if (this.measurable(now, evidence)) return this.open(now);
      // Too few answers yet to measure a limit by (a low one): a probe above the last stops there.
      if (this.curve) this.curve = this.curves.released(this.curve, now);
    }
    return measured;
  }

  /**
   * The first `PEAK_SPAN_MS` of a learner's sends open connections and warm up: what the service
   * accepts then is what the client managed, not a limit. Only what no background gives opens an
   * episode then: a share of 429s over `MAX_BACKGROUND`, over the last second or since the first
   * 429 (a limit's burst allowance accepts the first sends, then it refuses most), or `LIMITED_RUN`
   * 429s in a row; scattered 429s wait until the goodput measures the service.
   */
  private warmingUp(now: number, evidence: Evidence): boolean {
    if (now - (this.firstSentAt ?? Number.NEGATIVE_INFINITY) >= PEAK_SPAN_MS) return false;
    const sinceFirst = this.sinceFirstLimited ?? { answered: 0, limited: 0 };
    const mostly = (e: Evidence) => e.limited > MAX_BACKGROUND * e.answered;
    return this.limitedRun < LIMITED_RUN && !mostly(evidence) && !(sinceFirst.answered >= MIN_JUDGED && mostly(sinceFirst));
  }

  /** Counts the warm-up's answers from its first 429 on. */
  private countWarmUp(now: number, limited: boolean): void {
    if (now - (this.firstSentAt ?? now) >= PEAK_SPAN_MS) {
      this.sinceFirstLimited = undefined;
      return;
    }
    if (limited) this.sinceFirstLimited ??= { answered: 0, limited: 0 };
    if (!this.sinceFirstLimited) return;
    this.sinceFirstLimited.answered++;
    if (limited) this.sinceFirstLimited.limited++;
  }

  /**
   * An episode needs sends the service accepted to measure its limit by: `MIN_ACCEPTED` of them
   * in the last second, or, under a limit of a few per second, at least one among `MIN_JUDGED`
   * answers that are mostly 429s (more than background ever is), unless resends are refused less
   * than half as often as first sends (then the 429s may be about the jobs, which `byHistory`
   * tells once it has enough of them). A second that holds fewer than `MIN_JUDGED` answers (a few
   * jobs in flight, which all wait out a `Retry-After` of a whole second together) is read with
   * the second before it.
   */
  private measurable(now: number, recent: Evidence): boolean {
    const span = recent.answered < MIN_JUDGED ? HISTORY_MS : EVIDENCE_MS;
    const evidence = span === EVIDENCE_MS ? recent : { answered: this.answered.sum(now, span), limited: this.limited.sum(now, span) };
    const accepted = evidence.answered - evidence.limited;
    if (accepted >= MIN_ACCEPTED) return true;
    if (accepted < 1 || evidence.answered < MIN_JUDGED || evidence.limited <= MAX_BACKGROUND * evidence.answered) return false;
    const resent = this.resent.sum(now, span);
    if (resent === 0) return true;
    const resentLimited = this.resentLimited.sum(now, span);
    const first = evidence.answered - resent;
    const firstShare = first === 0 ? 0 : (evidence.limited - resentLimited) / first;
    return (2 * resentLimited) / resent >= firstShare;
  }

  /**
   * What the answers since the last cut say of it. A cut they still cannot tell from an unchanged
   * share after a whole evidence window (as when it did not go below what the service accepted)
   * counts as one that did not move it: `background`, which doubts the cut only while 429s stand
   * clearly above the background share.
   */
  private verdictOn(now: number, trial: Trial): "real" | "background" | undefined {
    const verdict = judge(trial.after, trial);
    if (verdict || now - this.phaseStart < EVIDENCE_MS || trial.after.answered < MIN_JUDGED) return verdict;
    return "background";
  }

  /**
   * Opens an episode, and slows down at once to what the service accepted over the last
   * `EPISODE_MS` (so the jobs still to go do not all run into 429s while it is measured).
   */
  private open(now: number): RateVerdict | undefined {
    const before = this.rateAt(now);
    const goodput = this.goodput(now);
    const last = this.curve?.limit ?? Number.POSITIVE_INFINITY;
    // A probe above the last limit drew on the service's burst allowance, so what it accepted over
    // the last 100 ms says too much: back, while the episode measures, to the highest of that
    // limit, half the probe (a doubling ago, no 429 yet) and what it accepted over a second.
    const back =
      before > last
        ? Math.min(before, Math.max(last, before / 2, this.settings.decrease * this.accepted.perSecond(now, EVIDENCE_MS, this.timedSince(now))))
        : undefined;
    this.episode = {
      start: now,
      before: this.curve,
      rateBefore: before,
      goodputBefore: goodput,
      steppedBackTo: back,
      lastLimitedAt: now,
      accepted: 0,
      acceptedWhileFull: 0,
      answered: 1,
      limited: 1,
      longestRun: this.limitedRun,
    };
    if (back === undefined) return this.setRate(now, before, goodput);
    this.curve = { limit: back, at: now + EPISODE_MS, k: 0, stretch: this.curve?.stretch ?? 1 };
    return { kind: "cut", rate: back, limit: back };
  }

  /**
   * A rate limit refuses a job's resend as often as a first send. Where resends, which waited out
   * their `Retry-After`, are clearly accepted more often than first sends, the 429s are about the
   * jobs, not the rate (a service that says "come back later" to each new job): background, no cut.
   */
  private byHistory(now: number, evidence: Evidence): RateVerdict | undefined {
    const resent = this.resent.sum(now, EVIDENCE_MS);
    const resentLimited = this.resentLimited.sum(now, EVIDENCE_MS);
    const first = evidence.answered - resent;
    const firstLimited = evidence.limited - resentLimited;
    if (resent < MIN_JUDGED || first < MIN_JUDGED) return undefined;
    if (!clearlyHigher({ answered: first, limited: firstLimited }, { answered: resent, limited: resentLimited })) {
      return undefined;
    }
    const pooled = evidence.limited / evidence.answered;
    const cut = this.doubted ?? this.trial;
    if (cut) this.curve = cut.before; // the cuts made for these 429s are undone
    this.trial = this.doubted = this.episode = undefined;
    this.learn(now, pooled);
    return { kind: "background", share: pooled };
  }

  /**
   * The last cut did not lower the share: undo it and learn the share as background. A share over
   * `MAX_BACKGROUND` is a limit the cuts did not get under, not background: they stay, and the
   * next episode measures again.
   */
  private undo(now: number, trial: Trial, evidence: Evidence): RateVerdict | undefined {
    this.trial = this.doubted = undefined;
    const share = (trial.share * trial.answered + evidence.limited) / (trial.answered + evidence.answered);
    if (share > MAX_BACKGROUND) return undefined;
    this.curve = trial.before;
    this.episode = undefined;
    this.learn(now, share);
    return { kind: "background", share: this.background };
  }

  /** Takes `share` for background from now on: 429s up to it come whatever the rate. */
  private learn(now: number, share: number): void {
    this.learned = Math.max(this.learnedNow(now), share);
    this.learnedAt = now;
    this.background = this.learned;
  }

  /**
   * An episode is measured once it has lasted `EPISODE_MS` and seen `MIN_ACCEPTED` answers, or
   * after `EVIDENCE_MS` (a limit of a few per second) whatever it saw.
   */
  private measured(now: number, episode: Episode): boolean {
    const age = now - episode.start;
    return age >= EVIDENCE_MS || (age >= EPISODE_MS && episode.answered >= MIN_ACCEPTED);
  }

  /** Ends a measured episode: the rate goes just below what the service accepted while it was full. */
  private cut(now: number, episode: Episode): RateVerdict | undefined {
    const full = episode.lastLimitedAt - episode.start;
    const timed = full >= MIN_FULL_MS && episode.acceptedWhileFull >= MIN_TIMED;
    const measured = timed ? (episode.acceptedWhileFull * 1000) / full : Math.min(episode.goodputBefore, this.goodput(now));
    // After a step back, a service that accepted nearly all that was sent (at the rate stepped back
    // to, or of all its answers, as when the batch sent less than that) showed the rate stepped back
    // to, not its limit: the few 429s were the probe's burst running out, or scattered ones, and
    // what was accepted beyond it answered the probe's sends. The limit is that rate.
    const back = episode.steppedBackTo;
    const nearlyAll = back !== undefined && (measured >= NEARLY_ALL * back || episode.accepted >= NEARLY_ALL * episode.answered);
    const goodput = nearlyAll ? back : measured;
    // The share its trial judges it against: the last second's (the episode's answers among them),
    // or the episode's where that is higher and shows a limit (mostly 429s, a run no background
    // gives, or a probe's overshoot). An episode that opened on a cluster of scattered 429s among
    // few answers (a batch whose jobs hold their places through Retry-After sends few) overstates
    // their share: judged against it, a cut that changed nothing would look as if it had helped.
    const answered = this.answered.sum(now, EVIDENCE_MS);
    const own = episode.limited / episode.answered;
    // An episode that lasted the whole second (a low limit) may have left it: its own share, then.
    const recent = answered >= episode.answered ? this.limited.sum(now, EVIDENCE_MS) / answered : own;
    const showsLimit = own > MAX_BACKGROUND || episode.longestRun >= LIMITED_RUN || back !== undefined;
    const share = showsLimit ? Math.max(own, recent) : recent;
    this.episode = undefined;
    this.startPhase(now);
    // 429s that stopped early among many answers leave a guess, likely low (the jobs that got them
    // held their places): the climb from it is quick. A low limit's few answers are not that.
    const guessed = full < MIN_FULL_MS && episode.answered >= MIN_ACCEPTED && !nearlyAll;
    const verdict = this.setRate(now, episode.rateBefore, goodput, guessed);
    if (verdict?.kind === "cut") this.startTrial(verdict.rate, goodput, { before: episode.before, share, answered });
    return verdict;
  }

  /**
   * A cut held at the floor, with 429s still clearly coming at it (`stillOver`): the limit is below
   * the floor, where its episode measured it. The rate is cut again at once toward that goodput (at most
   * halved again), with no episode to measure it anew.
   */
  private recut(now: number, trial: Trial, goodput: number): RateVerdict | undefined {
    this.startPhase(now);
    const verdict = this.setRate(now, this.rateAt(now), goodput);
    if (verdict?.kind === "cut") this.startTrial(verdict.rate, goodput, trial);
    return verdict;
  }

  /** Sends before `now` are old news: the answers to them no longer count as evidence. */
  private startPhase(now: number): void {
    this.phaseStart = now;
    this.answered.reset();
    this.limited.reset();
    this.resent.reset();
    this.resentLimited.reset();
  }

  /** Puts a cut to `rate`, where the service accepted `goodput`, on trial. */
  private startTrial(rate: number, goodput: number, { before, share, answered }: Pick<Trial, "before" | "share" | "answered">): void {
    const expected = 1 - (1 - this.background) * Math.min(1, goodput / rate);
    const held = rate > goodput && rate > this.settings.minRate;
    this.trial = { before, rate, share, answered, expected, after: { answered: 0, limited: 0 }, heldAbove: held ? goodput : undefined };
  }

  /** Sets the rate a little below `goodput`, and at most halves it from `before` or the recent peak. */
  private setRate(now: number, before: number, goodput: number, guessed = false): RateVerdict | undefined {
    const peak = (this.accepted.maxSum(now, PEAK_SPAN_MS) * 1000) / this.sendingFor(now, PEAK_SPAN_MS);
    const floor = Math.min(before, peak) / 2;
    if (goodput === 0 && floor === 0) return undefined; // nothing to learn a rate from
    const rate = Math.min(before, Math.max(this.settings.minRate, this.settings.decrease * goodput, floor));
    this.curve = this.curves.after(now, rate, goodput, this.stretchFor(now, goodput, guessed));
    this.tokens = 0;
    this.tokensAt = now;
    return { kind: "cut", rate, limit: Math.max(goodput, rate) };
  }

  /**
   * How long the climb after a cut that measured `limit` takes, against `recovery`: half as long
   * after a `guessed` limit, or under one below half the highest goodput a cut saw over a whole
   * second in the last `REMEMBER_MS`, as a limit that fell that far may come back.
   */
  private stretchFor(now: number, limit: number, guessed: boolean): number {
    const sustained = this.accepted.sum(now, EVIDENCE_MS) * (1000 / EVIDENCE_MS);
    if (now - this.highest.at > REMEMBER_MS) this.highest = { limit: 0, at: now };
    if (sustained >= this.highest.limit) this.highest = { limit: sustained, at: now };
    return guessed || limit < this.highest.limit / 2 ? QUICK_STRETCH : 1;
  }

  /**
   * Sends per second the service accepted over the last `EPISODE_MS`, or over the last
   * `EVIDENCE_MS` where that holds fewer than `MIN_ACCEPTED`, never over time before the sends
   * began. Fewer still (a limit of a few per second) are too few to time: they count as if spread
   * over the whole `EVIDENCE_MS`, an estimate that errs low, or, `MIN_TIMED` or more, over the
   * time since a fresh learner's first send where that is shorter (`sendingFor`).
   */
  private goodput(now: number): number {
    if (this.accepted.sum(now, EPISODE_MS) >= MIN_ACCEPTED) return this.accepted.perSecond(now, EPISODE_MS, this.timedSince(now));
    const accepted = this.accepted.sum(now, EVIDENCE_MS);
    if (accepted >= MIN_ACCEPTED) return this.accepted.perSecond(now, EVIDENCE_MS, this.timedSince(now));
    const spread = accepted >= MIN_TIMED ? this.sendingFor(now, EVIDENCE_MS) : EVIDENCE_MS;
    return (accepted * 1000) / spread;
  }

  /**
   * `span`, or less in a fresh learner's first `span`: the time since its first send (at least
   * `EPISODE_MS`). A limit met within the first sends counts what was accepted over the time there
   * was to accept it, not over a second before them.
   */
  private sendingFor(now: number, span: number): number {
    return Math.min(span, Math.max(EPISODE_MS, now - (this.firstSentAt ?? Number.NEGATIVE_INFINITY)));
  }

  /**
   * From when the answers in hand are timed: from when the sends now going out began, unless that
   * was too recently for them to be answered (a batch whose jobs all wait out a `Retry-After`
   * starts others in their places); the answers are then those of the sends before, timed with the
   * pause (an estimate that errs low, not a rate of nothing).
   */
  private timedSince(now: number): number {
    return now - this.busySince < EPISODE_MS ? this.busyBefore : this.busySince;
  }

  /**
   * Follows the share of 429s window by window, so the background falls when the 429s it stood for
   * stop coming, and rises back; never above what a trial proved comes whatever the rate, and
   * that proof fades (a real limit mistaken for background shows again).
   */
  private follow(now: number, limited: boolean): void {
    this.window.answered++;
    if (limited) this.window.limited++;
    if (this.window.answered < WINDOW_ANSWERS) return;
    const share = this.window.limited / this.window.answered;
    this.background = Math.min(this.learnedNow(now), 0.8 * this.background + 0.2 * share);
    this.window = { answered: 0, limited: 0 };
  }

  /**
   * The share of 429s that stands for background at `rate`: the learned one, or, for a probe above
   * the last limit, the share sends held below it got (`countHeld`) where that is higher. At a few
   * dozen sends a second, scattered 429s come one or two a second: no trial tells them from a
   * limit's in less than hundreds of answers, and a probe meets two within a second before it gets
   * far. Below the limit the trials still judge by the learned share: a cut to a limit measured
   * high holds the rate above the real one, and its 429s, held, would pass for background.
   */
  private backgroundAt(rate: number): number {
    if (!this.curve || rate <= this.curve.limit) return this.background;
    const held = this.held.limited >= HELD_LIMITED ? this.held.limited / (this.held.answered + HELD_PRIOR) : 0;
    return Math.max(this.background, Math.min(MAX_BACKGROUND, held));
  }

  /**
   * Counts an answer that came at `rate`, held below the limit measured (on trial at a cut, or
   * climbing back from one; not in an episode): a limit below that rate would show as an episode,
   * so its 429s are taken for background, by a probe (`backgroundAt`). A cluster of them counts once, as an
   * episode does: 429s within `EPISODE_MS` of the last one counted are the onset of a limit that
   * came down (the few before its episode opens), not scattered ones.
   */
  private countHeld(now: number, rate: number, limited: boolean): void {
    if (!this.curve || this.episode) return;
    if (rate > ((1 + this.settings.decrease) / 2) * this.curve.limit) return; // nearer the limit than the cut
    if (limited && now - this.heldLimitedAt < EPISODE_MS) return;
    this.held.answered++;
    if (limited) {
      this.held.limited++;
      this.heldLimitedAt = now;
    }
    if (this.held.answered >= HELD_ANSWERS) this.held = { answered: this.held.answered / 2, limited: this.held.limited / 2 };
  }

  private learnedNow(now: number): number {
    return this.learned * 0.5 ** ((now - this.learnedAt) / LEARNED_HALF_LIFE_MS);
  }
}

/**
 * Whether the answers after a cut held above its episode's goodput show a limit below the held
 * rate: at once for an episode whose share of 429s no background gives; else, for a rate held well
 * above that goodput (a limit there refuses a third of it or more), once `MIN_JUDGED` answers hold
 * at least half the share the limit leaves. Scattered 429s met while the goodput dipped do not.
 */
function stillOver({ share, expected, after }: Trial): boolean {
  if (share > MAX_BACKGROUND) return true;
  return expected >= HELD_FAR && after.answered >= MIN_JUDGED && after.limited >= (expected * after.answered) / 2;
}
