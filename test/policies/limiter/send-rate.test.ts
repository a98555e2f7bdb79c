import { describe, expect, it } from "vitest";
import { gcraTake } from "../../../src/policies/limiter/gcra.js";
import { freshSendRate, learn, rateOf, type RateVerdict, type SendRateState } from "../../../src/policies/limiter/send-rate.js";

/** The limiter's default lowest rate, in sends per second. */
const MIN_RATE = 1;
/** The share of the limit the learner cruises at (send-rate.ts): a cruise's rate over it is the limit. */
const CRUISE_SHARE = 0.97;

/** Answers one send made at `at` (ms), a job's resend or its first send: accepted, or 429. */
type Service = (at: number, resend: boolean) => "accepted" | "limited";

/** A token bucket of `perSecond` and `burst`, as a rate-limited service keeps (the reference server's). */
function tokenBucket(perSecond: number, burst: number): Service {
  let tokens = burst;
  let last = 0;
  return (at) => {
    tokens = Math.min(burst, tokens + ((at - last) * perSecond) / 1000);
    last = at;
    if (tokens < 1) return "limited";
    tokens -= 1;
    return "accepted";
  };
}

/** 429s at random whatever the rate, a share `share` of sends (a seeded LCG). */
function scattered(share: number, seed: number): Service {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31 < share ? "limited" : "accepted";
  };
}

interface Run {
  /** Each verdict, with the millisecond it came and the rate paced at just before. */
  readonly verdicts: (RateVerdict & { readonly at: number; readonly paced: number })[];
  readonly sent: number;
  readonly limited: number;
  /** The rate paced at, every 10 ms. */
  readonly rates: { readonly at: number; readonly rate: number }[];
  readonly state: SendRateState;
}

interface SimulateOptions {
  readonly ms?: number;
  readonly workers?: number;
  readonly latencyMs?: number;
  readonly retryAfterMs?: number;
  readonly minRate?: number;
  /** Called every millisecond with the state; what it returns becomes the state (a store's round trip, say). */
  readonly carry?: (state: SendRateState, now: number) => SendRateState;
  /** Runs on past `ms` (5 s at most) until a cut on trial is decided: the run ends with the learner's verdict, not halfway to it. */
  readonly decide?: boolean;
}

/**
 * A batch on simulated time, as the limiter runs it: `workers` jobs at once, paced by GCRA at the
 * learned rate, each answered `latencyMs` after it is sent; a job that gets 429 waits out a
 * Retry-After of `retryAfterMs`, as the retry policy does, and its next send is a resend (the
 * limiter tells the learner `resend: ctx.attempt > 1`).
 */
function simulate(service: Service, options: SimulateOptions = {}): Run {
  const { ms = 10_000, workers = 16, latencyMs = 5, retryAfterMs = 1_000, minRate = MIN_RATE, carry, decide = false } = options;
  let state = freshSendRate();
  const verdicts: Run["verdicts"] = [];
  const rates: Run["rates"] = [];
  const readyAt = new Array<number>(workers).fill(0);
  // Whether a worker's next send is its job's resend (its last send got 429), as the limiter tells the learner.
  const resend = new Array<boolean>(workers).fill(false);
  const inFlight: { at: number; sentAt: number; worker: number; limited: boolean; resend: boolean }[] = [];
  let tat = 0;
  let sent = 0;
  let limited = 0;
  for (let now = 0; now < ms || (decide && state.trial !== null && now < ms + 5_000); now++) {
    if (carry) state = carry(state, now);
    for (const call of inFlight.filter((c) => c.at === now)) {
      const paced = rateOf(state);
      const verdict = learn(state, now, call.sentAt, call.limited, minRate, call.resend);
      if (verdict) verdicts.push({ ...verdict, at: now, paced });
      readyAt[call.worker] = call.limited ? now + retryAfterMs : now;
      resend[call.worker] = call.limited;
    }
    for (let worker = 0; worker < workers; worker++) {
      if (readyAt[worker]! > now) continue;
      const take = gcraTake(tat, now, rateOf(state));
      if (take.wait > 0) break;
      tat = take.tat;
      readyAt[worker] = Number.POSITIVE_INFINITY;
      const answer = service(now, resend[worker]!);
      sent++;
      if (answer === "limited") limited++;
      inFlight.push({ at: now + latencyMs, sentAt: now, worker, limited: answer === "limited", resend: resend[worker]! });
    }
    for (let i = inFlight.length - 1; i >= 0; i--) if (inFlight[i]!.at <= now) inFlight.splice(i, 1);
    if (now % 10 === 0) rates.push({ at: now, rate: rateOf(state) });
  }
  return { verdicts, sent, limited, rates, state };
}

const cuts = (run: Run) => run.verdicts.filter((v) => v.kind === "cut");
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Answers `count` sends made `everyMs` apart from `from`, each 2 ms later: `limited(i)` says which got 429. */
function answer(state: SendRateState, from: number, count: number, everyMs: number, limited: (i: number) => boolean) {
  const verdicts: RateVerdict[] = [];
  for (let i = 0; i < count; i++) {
    const sentAt = from + i * everyMs;
    const verdict = learn(state, sentAt + 2, sentAt, limited(i), MIN_RATE);
    if (verdict) verdicts.push(verdict);
  }
  return verdicts;
}

describe("the send-rate learner", () => {
  it("stays unlimited while no 429 comes", () => {
    const run = simulate(() => "accepted", { ms: 5_000 });
    expect(run.sent).toBeGreaterThan(10_000);
    expect(run.verdicts).toEqual([]);
    expect(run.rates.every((r) => r.rate === Number.POSITIVE_INFINITY)).toBe(true);
  });

  it("cuts once for a burst of simultaneous 429s: answers to sends made before the cut are old news", () => {
    const state = freshSendRate();
    const verdicts = [];
    for (let i = 0; i < 500; i++) verdicts.push(learn(state, 1_010 + i, 1_000, true, MIN_RATE)); // all sent at 1,000 ms
    expect(verdicts.filter((v) => v !== undefined)).toEqual([expect.objectContaining({ kind: "cut" })]);
    expect(verdicts.at(-1)).toBeUndefined();
    // An answer after the cut to a send made before it changes nothing.
    const copy = JSON.parse(JSON.stringify(state)) as SendRateState;
    expect(learn(state, 1_600, 1_000, true, MIN_RATE)).toBeUndefined();
    expect(state).toEqual(copy);
  });

  it("comes down to what the service accepted in phases of mostly 429s, below half the rate sent", () => {
    const state = freshSendRate();
    // 200 sends a second, one in five accepted: 40 a second, until the rate is below half of 200.
    let deep: Extract<RateVerdict, { kind: "cut" }> | undefined;
    for (let i = 0; i < 2_000 && !deep; i++) {
      const verdict = learn(state, i * 5 + 2, i * 5, i % 5 !== 0, MIN_RATE);
      if (verdict?.kind === "cut" && verdict.limit < 100) deep = verdict;
    }
    // One phase's accepted sends are a handful (a fifth of 20-odd answers): one more or fewer moves
    // the reading by a quarter. The cut is of that order, not a floor of half, nor next to nothing.
    expect(deep).toBeDefined();
    expect(deep?.limit).toBeGreaterThan(40 / 2);
    expect(deep?.limit).toBeLessThan(40 * 1.5);
  });

  it("never cuts below half the rate for a modest share of 429s", () => {
    const state = freshSendRate();
    answer(state, 0, 1_000, 5, () => false); // 200 accepted a second
    // One send in ten refused, at 200 a second: a cut from the rate the batch sent.
    const verdicts = answer(state, 5_000, 2_000, 5, (i) => i % 10 === 0);
    const first = verdicts.find((v) => v.kind === "cut");
    expect(first).toBeDefined();
    expect((first as Extract<RateVerdict, { kind: "cut" }>).limit).toBeGreaterThanOrEqual(100);
    // Paced at a learned rate, against a limit and against scattered 429s: no cut of a modest share
    // goes below half the rate paced at.
    for (const run of [simulate(tokenBucket(200, 20)), simulate(scattered(0.1, 1), { retryAfterMs: 0 })]) {
      const paced = cuts(run).filter((v) => Number.isFinite(v.paced));
      expect(paced.length).toBeGreaterThan(0);
      for (const cut of paced) expect((cut as { limit: number }).limit).toBeGreaterThanOrEqual(cut.paced / 2);
    }
  });

  it("ends unlimited again under scattered 429s at a steady share, where a token bucket's limit stays learned", () => {
    // The same batch, its jobs resent at once after a 429 (a steady demand): against 5 % of sends
    // refused whatever the rate, and against a token bucket below what the batch would send. A cut
    // on trial when the 30 s are up is let run to its verdict (a trial cruise lasts 500 ms).
    for (let seed = 1; seed <= 8; seed++) {
      const noise = simulate(scattered(0.05, seed), { ms: 30_000, retryAfterMs: 0, decide: true });
      expect(rateOf(noise.state), `seed ${seed}`).toBe(Number.POSITIVE_INFINITY);
    }
    const bucket = simulate(tokenBucket(1_000, 50), { ms: 30_000, retryAfterMs: 0 });
    expect(Number.isFinite(rateOf(bucket.state))).toBe(true);
  });

  it("429s to every first send, with resends accepted, leave the rate unlimited", () => {
    // A service that says "come back in a second" to each new job and renders it when it does: the
    // 429s are about the jobs, not the rate. 16 callers, each job waiting out its Retry-After of 1 s.
    const run = simulate((_at, resend) => (resend ? "accepted" : "limited"), { ms: 5_000, workers: 16, retryAfterMs: 1_000 });
    expect(run.limited).toBeGreaterThanOrEqual(run.sent / 2); // each resend follows a refused first send
    expect(rateOf(run.state)).toBe(Number.POSITIVE_INFINITY);
    // A cut they made is undone as soon as a phase holds three resends and three first sends (first
    // sends clearly more refused): the resends come a Retry-After (1 s) after the refusals, and a
    // few sends at the cut rate more. No cut stays in force for longer than about 2 s.
    let longest = 0;
    let since: number | undefined;
    for (const { at, rate } of run.rates) {
      if (Number.isFinite(rate)) since ??= at;
      else since = undefined;
      if (since !== undefined) longest = Math.max(longest, at - since);
    }
    expect(longest).toBeLessThanOrEqual(2_000);
  });

  it("learns a limit from one caller, whose every resend follows a wait", () => {
    // One send in flight at a time, against 12 a second with a burst of 1: a resend comes a
    // Retry-After (1 s) later, when the bucket has refilled, and a first send follows an answer by
    // 5 ms, when it has not. First sends refused and resends accepted say nothing of the jobs until
    // a cut has shown that the 429s stay at a lower rate.
    const run = simulate(tokenBucket(12, 1), { ms: 60_000, workers: 1, retryAfterMs: 1_000 });
    expect(Number.isFinite(rateOf(run.state))).toBe(true);
    expect(run.limited).toBeLessThan(run.sent / 4);
  });

  it("learns a token bucket's limit to within 10 %", () => {
    for (const [perSecond, burst] of [
      [200, 20],
      [50, 10],
    ] as const) {
      // Read over the last 15 s: at any one moment a probe may have just raised it, or a cut lowered it.
      const run = simulate(tokenBucket(perSecond, burst), { ms: 30_000 });
      const late = run.rates.filter((r) => r.at >= 15_000).map((r) => r.rate / CRUISE_SHARE);
      expect(late.every(Number.isFinite)).toBe(true);
      expect(Math.abs(median(late) / perSecond - 1)).toBeLessThanOrEqual(0.1);
    }
  });

  // Was an it.fails: the earlier learner learned ~218/s and cruised at ~212/s, above the limit. The
  // frozen learner holds this claim (median ~197/s over the last 15 s), so it is a plain test again.
  it("then cruises below it most of the time", () => {
    const run = simulate(tokenBucket(200, 20), { ms: 30_000 });
    const late = run.rates.filter((r) => r.at >= 15_000).map((r) => r.rate);
    expect(median(late)).toBeLessThanOrEqual(200);
  });

  it("ends a probe that its answers do not decide, after a cruise's length", () => {
    // A limit learned, then answers at the paced rate, 5 ms after each send: all accepted until a
    // probe begins, then chosen against the probe's test (a 429 whenever its evidence leans to room,
    // none when it leans to the limit), so that the test never decides.
    const { state } = simulate(tokenBucket(100, 5), { ms: 5_000 });
    let now = 5_000;
    const next = () => (now += Math.ceil(1000 / rateOf(state)));
    while (state.phase.mode !== "probe" && now < 20_000) learn(state, next() + 5, now, false, MIN_RATE);
    expect(state.phase.mode).toBe("probe");
    const began = now;
    while (state.phase.mode === "probe" && now < began + 60_000) learn(state, next() + 5, now, state.phase.evidence < 0, MIN_RATE);
    expect(state.phase.mode).toBe("cruise");
    // A cruise lasts 1 s and 100 answers: at about 100 a second, under 2 s.
    expect(now - began).toBeLessThan(2_000);
  });

  it("says persistent when most sends are refused at the lowest rate, and only there", () => {
    const minRate = 20;
    // One send in ten accepted, whatever the rate: slowing down does not help.
    let sends = 0;
    const run = simulate(() => (++sends % 10 === 0 ? "accepted" : "limited"), { ms: 20_000, minRate, retryAfterMs: 50 });
    const persistent = run.verdicts.filter((v) => v.kind === "persistent");
    expect(persistent.length).toBeGreaterThan(0);
    for (const verdict of persistent) expect(verdict.paced).toBeLessThanOrEqual(minRate);
    // A limit well above the lowest rate is never persistent.
    const limit = simulate(tokenBucket(200, 20), { ms: 20_000, minRate });
    expect(limit.verdicts.some((v) => v.kind === "persistent")).toBe(false);
  });

  it("goes on identically from its state read back from JSON, as a shared store keeps it", () => {
    const roundTrip = (state: SendRateState, now: number) => (now % 250 === 0 ? (JSON.parse(JSON.stringify(state)) as SendRateState) : state);
    // 30 s: scattered 429s cut only now and then (a phase's share must clear a z of 3 against the
    // background, judged every 20 answers); a run that never cut would not show a trial surviving it.
    for (const service of [() => tokenBucket(200, 20), () => scattered(0.05, 1)]) {
      const plain = simulate(service(), { ms: 30_000 });
      const stored = simulate(service(), { ms: 30_000, carry: roundTrip });
      expect(cuts(plain).length).toBeGreaterThan(0);
      expect(stored.verdicts).toEqual(plain.verdicts);
      expect(stored.rates).toEqual(plain.rates);
      expect(stored.state).toEqual(plain.state);
    }
  });
});
