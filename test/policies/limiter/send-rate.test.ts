import { describe, expect, it } from "vitest";
import { type RateVerdict, SendRate } from "../../../src/policies/limiter/send-rate.js";

const settings = { decrease: 0.97, recovery: 2_000, minRate: 1 };

/** Answers one send made at `at` (ms), a job's resend or not: accepted, or 429. */
type Service = (at: number, resend: boolean) => "accepted" | "limited";

/** A token bucket of `perSecond` (which may change with time) and `burst`, as a rate-limited service keeps. */
function tokenBucket(perSecond: (at: number) => number, burst: number): Service {
  let tokens = burst;
  let last = 0;
  return (at) => {
    tokens = Math.min(burst, tokens + ((at - last) * perSecond(at)) / 1000);
    last = at;
    if (tokens < 1) return "limited";
    tokens -= 1;
    return "accepted";
  };
}

/** 429s at random, whatever the rate: a seeded share of `share`. */
function scattered(share: number, seed = 1): Service {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31 < share ? "limited" : "accepted";
  };
}

interface Run {
  /** Each verdict, with the millisecond it came. */
  readonly verdicts: (RateVerdict & { readonly at: number })[];
  readonly sent: number;
  readonly limited: number;
  readonly done: number;
  /** The rate at each 10 ms, by time. */
  readonly rates: { at: number; rate: number }[];
  readonly learner: SendRate;
}

/**
 * A batch on simulated time: `workers` jobs at once, each answered `latencyMs` after it is sent;
 * a job that gets 429 waits out a Retry-After of `retryAfterMs`, as the retry policy does.
 * Without `learn`, the same loop sends whenever a worker is free: a plain retry loop. `learner`: one
 * of the test's own, for a service that reads its rate.
 */
function simulate(
  service: Service,
  { ms = 10_000, workers = 16, latencyMs = 5, retryAfterMs = 1_000, learn = true, learner = new SendRate(settings) } = {},
): Run {
  const verdicts: Run["verdicts"] = [];
  const readyAt = new Array<number>(workers).fill(0);
  const resending = new Array<boolean>(workers).fill(false);
  const inFlight: { at: number; sentAt: number; worker: number; resend: boolean; answer: "accepted" | "limited" }[] = [];
  let sent = 0;
  let limited = 0;
  let done = 0;
  const rates: { at: number; rate: number }[] = [];
  for (let now = 0; now < ms; now++) {
    for (let i = inFlight.length - 1; i >= 0; i--) {
      const call = inFlight[i]!;
      if (call.at > now) continue;
      inFlight.splice(i, 1);
      const verdict = !learn
        ? undefined
        : call.answer === "limited"
          ? learner.limit(now, call.sentAt, call.resend)
          : learner.accept(now, call.sentAt, call.resend);
      if (verdict) verdicts.push({ ...verdict, at: now });
      resending[call.worker] = call.answer === "limited";
      if (call.answer === "limited") readyAt[call.worker] = now + retryAfterMs;
      else {
        done++;
        readyAt[call.worker] = now;
      }
    }
    for (let worker = 0; worker < workers; worker++) {
      if (readyAt[worker]! > now || (learn && learner.take(now) > 0)) continue;
      readyAt[worker] = Number.POSITIVE_INFINITY;
      const resend = resending[worker]!;
      const answer = service(now, resend);
      sent++;
      if (answer === "limited") limited++;
      inFlight.push({ at: now + latencyMs, sentAt: now, worker, resend, answer });
    }
    if (now % 10 === 0) rates.push({ at: now, rate: learner.rateAt(now) });
  }
  return { verdicts, sent, limited, done, rates, learner };
}

const cuts = (run: Run) => run.verdicts.filter((v) => v.kind === "cut");

/**
 * A learner that saw 200 accepted per second for a second, then 100 ms of a full service (150
 * accepted per second, and 429s), and the answer at 1,150 ms that ends that episode with a cut.
 */
function cutAt1150(): { learner: SendRate; verdict: RateVerdict | undefined } {
  const learner = new SendRate(settings);
  for (let t = 0; t < 1_000; t += 5) learner.accept(t + 5, t);
  for (let t = 1_000; t < 1_100; t++) {
    if (t % 20 === 0 || t % 20 === 7 || t % 20 === 14) learner.accept(t, 999);
    else if (t % 2 === 1) learner.limit(t, 999);
  }
  return { learner, verdict: learner.accept(1_150, 999) };
}

/**
 * A learner whose cut at 1,150 ms proved real, then probing at twice its `limit`, where the service
 * accepted `burstPerSecond` for 100 ms, until a 429 opens an episode at `at`: the probe was at
 * `before`, and stepped `back`.
 */
function probeSteppedBack(burstPerSecond: number): { learner: SendRate; limit: number; before: number; back: number; at: number } {
  const { learner, verdict: cut } = cutAt1150();
  const { limit } = cut as { limit: number };
  for (let t = 1_150; t < 1_400; t += 10) learner.accept(t + 1, t); // the cut proved real
  let now = 1_400;
  while (learner.rateAt(now) < 2 * limit) now += 10; // probing, well above the limit
  for (let t = now; t < now + 100; t += 1000 / burstPerSecond) learner.accept(t + 1, t);
  const before = learner.rateAt(now + 101);
  let verdict: RateVerdict | undefined;
  let at = now + 100;
  for (; !verdict; at++) verdict = learner.limit(at + 1, at);
  expect(verdict).toMatchObject({ kind: "cut" });
  return { learner, limit, before, back: (verdict as { rate: number }).rate, at };
}

describe("SendRate", () => {
  it("is unlimited while the service never says rate_limited", () => {
    const run = simulate(() => "accepted", { ms: 2_000 });
    expect(run.verdicts).toEqual([]);
    expect(run.learner.rateAt(2_000)).toBe(Number.POSITIVE_INFINITY);
    expect(run.learner.take(2_000)).toBe(0);
  });

  it("learns a real limit: the rate settles just under it, with few 429s", () => {
    const run = simulate(tokenBucket(() => 200, 20));
    const settled = run.rates.filter((r) => r.at >= 2_000).map((r) => r.rate);
    const mean = settled.reduce((a, b) => a + b, 0) / settled.length;
    expect(mean).toBeGreaterThan(185);
    expect(mean).toBeLessThan(230);
    expect(run.done).toBeGreaterThan(200 * 10 * 0.93); // the limit allows 2,000 in 10 s
    expect(run.limited / run.sent).toBeLessThan(0.03);
  });

  it("cuts once for a burst of simultaneous 429s: answers to sends before the cut are old news", () => {
    const learner = new SendRate(settings);
    for (let t = 0; t < 1_000; t += 5) learner.accept(t + 5, t); // 200 accepted per second
    const verdicts = [];
    for (let i = 0; i < 30; i++) verdicts.push(learner.limit(1_010 + i, 1_000)); // all sent at 1,000
    const opened = verdicts.filter((v) => v?.kind === "cut");
    expect(opened).toHaveLength(1); // the episode opens, slowing down at once
    const measured = learner.accept(1_200, 1_000); // the episode ends on the next answer
    expect(measured?.kind).toBe("cut");
    const rate = learner.rateAt(1_200);
    for (let i = 0; i < 30; i++) expect(learner.limit(1_201 + i, 1_100)).toBeUndefined(); // sent before the cut
    expect(learner.rateAt(1_231)).toBeGreaterThanOrEqual(rate);
  });

  it("measures what the service accepted from when the sends began, not over time before them", () => {
    const learner = new SendRate(settings);
    const start = 100_000; // long after the clock's epoch, as in a real process
    // 1,000 sends per second from `start`, each answered 1 ms later; 429s from the 30th millisecond.
    let verdict: RateVerdict | undefined;
    for (let t = start; !verdict; t++) {
      expect(learner.take(t)).toBe(0);
      verdict = t - start < 30 || t % 3 ? learner.accept(t + 1, t) : learner.limit(t + 1, t);
    }
    expect(verdict).toMatchObject({ kind: "cut" });
    // Over the last 100 ms the rate was 1,000/s less the 429s; over the 30-odd ms it covers, not 100.
    expect((verdict as { rate: number }).rate).toBeGreaterThan(600);
  });

  it("counts the few sends a fresh batch got accepted over the time since its first, not over a second before it", () => {
    // A limit of 100/s with a burst allowance of 5: the allowance takes the first sends, then 429s
    // open an episode within 20 ms of the first send.
    const learner = new SendRate(settings);
    const start = 100_000;
    let verdict: RateVerdict | undefined;
    for (let i = 0; i < 20 && !verdict; i++) {
      const t = start + i;
      learner.take(t);
      verdict = i < 5 ? learner.accept(t + 2, t) : learner.limit(t + 2, t);
    }
    expect(verdict).toMatchObject({ kind: "cut" });
    // 5 accepted, counted over 100 ms (the least a rate is timed over): 50 a second, not the 5 of a
    // whole second, nor the floor of 10 (half of a peak read over 250 ms).
    expect((verdict as { rate: number }).rate).toBeGreaterThan(40);
  });

  it("times a cut on the sends its answers are of, not on new ones just sent into its jobs' places", () => {
    // A burst allowance of 20 takes the first sends, then 16 jobs get 429 and wait out their
    // Retry-After. 100 ms later the batch starts other jobs in their places; the first answer to
    // them ends the episode, before any of their own answers could time anything.
    const learner = new SendRate(settings);
    const start = 100_000;
    for (let t = start; t < start + 5; t += 0.25) {
      learner.take(t);
      learner.accept(t + 1, t);
    }
    for (let i = 0; i < 16; i++) learner.limit(start + 6, start + 5);
    learner.take(start + 110);
    const verdict = learner.accept(start + 112, start + 110);
    expect(verdict).toMatchObject({ kind: "cut" });
    // 20 accepted in the 112 ms since the sends began: about 180 a second, not a rate of nothing
    // held at the floor of half the peak (80/s over 250 ms).
    expect((verdict as { rate: number }).rate).toBeGreaterThan(150);
  });

  it("does not take a cold start's goodput for a limit: a few 429s wait until the sends are warm", () => {
    const learner = new SendRate(settings);
    const start = 100_000;
    // Connections opening: 100 answers per second for 150 ms, then 1,000; every 10th answer a 429.
    let verdict: RateVerdict | undefined;
    let n = 0;
    for (let t = start; !verdict; t += t - start < 150 ? 10 : 1) {
      learner.take(t);
      verdict = ++n % 10 === 0 ? learner.limit(t + 1, t) : learner.accept(t + 1, t);
      if (t - start < 250) expect(verdict).toBeUndefined();
    }
    // Measured over the warm sends: near 900 accepted per second, not the 100 of the cold start.
    expect(verdict).toMatchObject({ kind: "cut" });
    expect((verdict as { limit: number }).limit).toBeGreaterThan(800);
  });

  it("cuts at once, even in the warm-up, for a limit that refuses most of the first sends", () => {
    const learner = new SendRate(settings);
    let verdict: RateVerdict | undefined;
    let t = 100_000;
    learner.take(t);
    for (; !verdict && t < 100_050; t++) verdict = t % 3 === 0 ? learner.accept(t + 1, t) : learner.limit(t + 1, t);
    expect(verdict).toMatchObject({ kind: "cut" });
    expect(t - 100_000).toBeLessThan(50);
  });

  it("cuts in the warm-up at a run of 429s: a limit past its burst allowance", () => {
    const learner = new SendRate(settings);
    const start = 100_000;
    learner.take(start);
    for (let t = start; t < start + 20; t++) learner.accept(t + 1, t); // the burst allowance
    const verdicts = [1, 2, 3, 4, 5].map((i) => learner.limit(start + 20 + i, start + 20 + i));
    // Five 429s of 25 answers: a share no higher than a background's, but five in a row.
    expect(verdicts.slice(0, 4)).toEqual([undefined, undefined, undefined, undefined]);
    expect(verdicts[4]).toMatchObject({ kind: "cut" });
  });

  it("cuts in the warm-up when most answers since its first 429 are 429s, though the burst allowance's dilute the second's", () => {
    const learner = new SendRate(settings);
    const start = 100_000;
    learner.take(start);
    for (let t = start; t < start + 30; t++) learner.accept(t + 1, t); // the burst allowance
    // Then three 429s in every five answers, never more than two in a row: 6 of 40 answers in the
    // last second, but 6 of the 10 since the first 429.
    const answers: (RateVerdict | undefined)[] = [];
    for (let i = 0; i < 20 && !answers.at(-1); i++) {
      const t = start + 30 + i;
      answers.push([0, 2, 3].includes(i % 5) ? learner.limit(t + 1, t) : learner.accept(t + 1, t));
    }
    expect(answers.at(-1)).toMatchObject({ kind: "cut" });
    expect(answers.length).toBe(11); // the first 429 after ten answers since the first, mostly 429s
  });

  it("never cuts below half the goodput before a burst of 429s", () => {
    let burst = false;
    const service: Service = (at) => (burst && at < 3_000 ? "limited" : "accepted");
    const learner = new SendRate(settings);
    let lowest = Number.POSITIVE_INFINITY;
    // 200 accepted per second for 2 s, then every send gets 429 for a second, at the same pace.
    for (let t = 0; t < 4_000; t += 5) {
      burst = t >= 2_000;
      if (service(t, false) === "limited") learner.limit(t + 5, t);
      else learner.accept(t + 5, t);
      lowest = Math.min(lowest, learner.rateAt(t + 5));
    }
    expect(lowest).toBeGreaterThanOrEqual(100 * 0.99); // half of 200
  });

  it("stops cutting for scattered 429s: two trials that did not lower the share, then it is background", () => {
    const run = simulate(scattered(0.05), { ms: 5_000 });
    expect(run.verdicts.filter((v) => v.kind === "background")).toHaveLength(1);
    // Each trial cuts as its episode opens, and as it ends; one may pass for a real limit by chance
    // (its workers held by Retry-After, the goodput falls as a limit's would), and the probe above
    // it steps back once more before the third.
    expect(cuts(run).length).toBeLessThanOrEqual(10);
    expect(run.learner.backgroundShare).toBeGreaterThan(0.02);
    expect(run.learner.backgroundShare).toBeLessThan(0.1);
    expect(run.learner.rateAt(5_000)).toBe(Number.POSITIVE_INFINITY);
    const plainLoop = simulate(scattered(0.05), { ms: 5_000, learn: false }).done;
    expect(run.done).toBeGreaterThan(plainLoop * 0.95);
  });

  it("keeps up with a plain loop under scattered 429s when few answers come: an episode opened on a cluster does not set the share a cut is judged by", () => {
    // Slow answers (15 ms) and jobs that hold their places through Retry-After: episodes of ten or
    // so answers, opened on clusters of 429s whose share is well above the background's.
    const ratios = Array.from({ length: 12 }, (_, i) => {
      const learned = simulate(scattered(0.05, i + 1), { latencyMs: 15 }).done;
      return learned / simulate(scattered(0.05, i + 1), { latencyMs: 15, learn: false }).done;
    });
    expect(ratios.reduce((a, b) => a + b, 0) / ratios.length).toBeGreaterThan(0.9);
    expect(Math.min(...ratios)).toBeGreaterThan(0.6);
  });

  it("does not cut for a 429 to every first send: resends, accepted, show it is not the rate", () => {
    const firstSends: Service = (_, resend) => (resend ? "accepted" : "limited");
    const run = simulate(firstSends, { ms: 5_000 });
    const learned = run.verdicts.findIndex((v) => v.kind === "background");
    expect(learned).toBeGreaterThanOrEqual(0);
    expect(learned).toBeLessThanOrEqual(1); // at most the slow-down of the episode it was learned in
    expect(cuts(run).length).toBe(learned);
    expect(run.learner.rateAt(5_000)).toBe(Number.POSITIVE_INFINITY);
    expect(run.learner.backgroundShare).toBeGreaterThan(0.3);
    expect(run.done).toBeGreaterThanOrEqual(simulate(firstSends, { ms: 5_000, learn: false }).done * 0.95);
  });

  it("follows a limit that drops and comes back", () => {
    const limit = (at: number) => (at >= 3_000 && at < 7_000 ? 50 : 200);
    const run = simulate(tokenBucket(limit, 20), { ms: 12_000 });
    const rateAt = (at: number) => run.rates.find((r) => r.at === at)!.rate;
    expect(rateAt(2_900)).toBeGreaterThan(170);
    // Followed down: the rate most of the time, as probes above the limit come and go.
    const low = run.rates.filter((r) => r.at >= 4_500 && r.at < 7_000).map((r) => r.rate).sort((a, b) => a - b);
    expect(low[Math.floor(low.length / 2)]).toBeLessThan(60);
    expect(rateAt(10_000)).toBeGreaterThan(170); // and back up
    expect(run.limited / run.sent).toBeLessThan(0.05);
  });

  it("probes a limit that fell below half the highest it measured more often, and finds it back sooner", () => {
    // 200/s, 50/s for 4 s from `down`, then 200/s again; against 50/s all along. The cuts counted
    // from a second after the fall to its end, summed over five times of the fall, so that where
    // the probes fall in the window matters little.
    const downs = [2_000, 2_500, 3_000, 3_500, 4_000];
    const always = simulate(tokenBucket(() => 50, 20), { ms: 8_000 });
    const cutsBetween = (run: Run, from: number, to: number) => cuts(run).filter((v) => v.at >= from && v.at < to).length;
    let fellCuts = 0;
    let alwaysCuts = 0;
    for (const down of downs) {
      const up = down + 4_000;
      const fell = simulate(tokenBucket((at) => (at >= down && at < up ? 50 : 200), 20), { ms: up + 2_000 });
      fellCuts += cutsBetween(fell, down + 1_000, up);
      alwaysCuts += cutsBetween(always, down + 1_000, up);
      const back = fell.rates.find((r) => r.at >= up && r.rate > 150)!.at;
      expect(back - up).toBeLessThan(1_700); // one quick plateau and two doublings
    }
    // Probes (two verdicts each) more often: the climb and the wait before probing take half as
    // long, the trials no less (29 cuts against 24 here; 17 against 20 were the curve not quicker).
    expect(fellCuts).toBeGreaterThanOrEqual(1.15 * alwaysCuts);
  });

  it("climbs back twice as fast from a limit its episode could not time, a guess", () => {
    const learner = new SendRate(settings);
    for (let t = 0; t < 1_000; t += 5) learner.accept(t + 5, t); // 200 per second
    // Ten 429s in 5 ms, then none: the jobs that got them hold their places, and the few sends
    // accepted meanwhile time nothing. The cut guesses from what was accepted.
    for (let t = 1_000; t < 1_005; t += 0.5) learner.limit(t, 999); // the episode opens
    let cut: RateVerdict | undefined;
    let t = 1_005;
    for (; !cut && t < 2_000; t += 10) cut = learner.accept(t + 1, t);
    expect(cut).toMatchObject({ kind: "cut" });
    const { limit } = cut as { limit: number };
    for (let at = t; at < t + 300; at += 10) learner.accept(at + 1, at); // the cut proves real
    // A cut of 3 % is made up in 0.78 s, and the plateau over it lasts 0.68 s: half of each here.
    expect(learner.rateAt(t + 1_000)).toBeGreaterThan(1.5 * limit);
  });

  it("opens the next episode at once when the limit comes down right after a cut, not when its trial is judged", () => {
    const learner = new SendRate(settings);
    for (let t = 0; t < 1_000; t += 5) learner.accept(t + 5, t); // 200 per second
    // One send in eight refused: a limit a little under the rate. The episode slows down as it
    // opens, and cuts once measured.
    let cutsSeen = 0;
    let t = 1_000;
    for (let n = 0; cutsSeen < 2 && t < 3_000; t += 5, n++) {
      const verdict = n % 8 === 0 ? learner.limit(t + 1, t) : learner.accept(t + 1, t);
      if (verdict?.kind === "cut") cutsSeen++;
    }
    expect(cutsSeen).toBe(2);
    const cutAt = t;
    // Then the limit comes down: two sends in three refused, as the cut's trial begins.
    let next: RateVerdict | undefined;
    for (let n = 0; !next && t < cutAt + 300; t += 2, n++) next = n % 3 === 0 ? learner.accept(t + 1, t) : learner.limit(t + 1, t);
    expect(next).toMatchObject({ kind: "cut" });
    expect(t - cutAt).toBeLessThan(50); // a clear rise in a dozen answers, not the trial's 200 ms
  });

  it("cuts again at once when 429s go on at the floor of a cut: a limit that dropped to a quarter", () => {
    const learner = new SendRate(settings);
    for (let t = 0; t < 1_000; t += 5) learner.accept(t + 5, t); // 200 per second
    // The limit drops to 50/s: 1 of every 20 answers accepted (sends at 1,000/s), until the
    // episode that opened on them has been measured and cuts.
    const verdicts: RateVerdict[] = [];
    let t = 1_000;
    for (; verdicts.length < 2; t++) {
      const verdict = t % 20 === 0 ? learner.accept(t + 1, t) : learner.limit(t + 1, t);
      if (verdict) verdicts.push(verdict);
    }
    // Half the peak is as low as one cut goes: 97/s, held above the 50/s the episode measured.
    const floor = verdicts[1];
    expect(floor).toMatchObject({ kind: "cut", limit: (floor as { rate: number }).rate });
    const held = (floor as { rate: number }).rate;
    expect(held).toBeGreaterThan(90);
    // At that rate, every other send still gets 429: cut again toward 50/s within a few of them,
    // with no second episode to measure it anew.
    const cutAt = t;
    let second: RateVerdict | undefined;
    let answers = 0;
    for (let t = cutAt; !second && answers < 20; t += 1000 / held) {
      answers++;
      second = answers % 2 ? learner.limit(t + 1, t) : learner.accept(t + 1, t);
    }
    expect(second).toMatchObject({ kind: "cut" });
    expect((second as { rate: number }).rate).toBeLessThan(55);
    expect((second as { rate: number }).rate).toBeGreaterThan(45);
    expect(answers).toBeLessThanOrEqual(6);
  });

  it("learns a limit of a few per second, which gives fewer answers than a second holds to judge by", () => {
    const run = simulate(tokenBucket(() => 5, 1), { ms: 20_000 });
    const settled = run.rates.filter((r) => r.at >= 10_000).map((r) => r.rate);
    expect(settled.reduce((a, b) => a + b, 0) / settled.length).toBeLessThan(10); // probes above it come back
    expect(run.done).toBeGreaterThan(5 * 20 * 0.5); // the limit allows 100 in 20 s
    expect(run.limited / run.sent).toBeLessThan(0.5); // 16 at the start of 100 or so, then a few per probe
    expect(run.verdicts.some((v) => v.kind === "background")).toBe(false);
  });

  it("learns a limit from a few jobs in flight that all wait out a Retry-After of a second: fewer answers a second than it judges by", () => {
    // Four callers against 40/s: each second, a handful accepted and four 429s together, then a
    // second's wait. The last second never holds ten answers; with the one before it, it does.
    const limit = tokenBucket(() => 40, 2);
    const run = simulate(limit, { workers: 4, latencyMs: 2, ms: 20_000 });
    expect(cuts(run)[0]?.at).toBeLessThan(3_000);
    // The cut, to the few a second that were accepted, gives fewer than ten answers a second: a
    // second with no 429 after it ends its trial, and the rate climbs toward the limit.
    const climbed = run.rates.find((r) => r.at > 1_000 && r.rate > 20 && Number.isFinite(r.rate));
    expect(climbed?.at).toBeLessThan(5_000);
    const loop = simulate(tokenBucket(() => 40, 2), { workers: 4, latencyMs: 2, ms: 20_000, learn: false });
    expect(run.done).toBeGreaterThan(3 * loop.done);
    expect(run.limited / run.sent).toBeLessThan(0.1);
  });

  it("judges a cut whose episode outlasted the last second by the episode's own 429s", () => {
    const learner = new SendRate(settings);
    // The first sends, against a low limit with a burst allowance: mostly 429s, never five in a
    // row, open the episode; its answers come in its first milliseconds, a third of them 429s.
    const answers = "LLALLALLAL" + "ALAALAALAA";
    [...answers].forEach((answer, i) => (answer === "L" ? learner.limit(10 + i, 0) : learner.accept(10 + i, 0)));
    // The next answer comes more than a second later, and ends it.
    const cut = learner.accept(1_100, 1_000);
    expect(cut).toMatchObject({ kind: "cut" });
    const { rate } = cut as { rate: number };
    // Every send at the cut's rate is accepted, as under a real limit: the trial says so, and the
    // rate climbs again.
    for (let at = 1_100; at < 4_000; at += 1000 / rate) learner.accept(at + 5, at);
    expect(learner.rateAt(4_000)).toBeGreaterThan(1.2 * rate);
  });

  it("never takes a share of 429s over a half for background: a limit the cuts did not get under", () => {
    for (const perSecond of [5, 20, 50]) {
      const run = simulate(tokenBucket(() => perSecond, Math.max(1, perSecond / 5)), { ms: 10_000 });
      expect(run.learner.backgroundShare).toBeLessThanOrEqual(0.5);
      expect(run.learner.rateAt(10_000)).toBeLessThan(perSecond * 3);
    }
  });

  it("climbs back to the estimated limit within `recovery` after a cut, then probes above it", () => {
    const { learner, verdict } = cutAt1150();
    expect(verdict).toMatchObject({ kind: "cut" });
    const { rate, limit } = verdict as { rate: number; limit: number };
    expect(limit).toBeGreaterThan(130);
    expect(limit).toBeLessThan(170);
    expect(rate).toBeCloseTo(limit * settings.decrease, 5);
    expect(learner.rateAt(1_150)).toBe(rate);
    // Until the sends after it prove the cut, it holds the cut's rate: a climb toward a limit measured
    // high, or a probe above it, would blur the proof with its 429s.
    expect(learner.rateAt(1_150 + settings.recovery + 3_000)).toBe(rate);
    for (let t = 1_150; t < 1_400; t += 10) learner.accept(t + 1, t); // no 429 at the new rate: the trial proves it
    expect(learner.rateAt(1_150 + settings.recovery)).toBeGreaterThanOrEqual(limit * 0.999);
    expect(learner.rateAt(1_150 + settings.recovery / 4)).toBeLessThan(limit); // the plateau, under it
    expect(learner.rateAt(1_150 + settings.recovery + 3_000)).toBeGreaterThan(limit * 2);
  });

  it("climbs only while the batch sends: a pause holds the rate where its last sends left it", () => {
    const { learner, verdict } = cutAt1150();
    const { limit } = verdict as { limit: number };
    let t = 1_150;
    // Sending at the rate, every send accepted, until the probe is well above the limit.
    for (; learner.rateAt(t) < 1.5 * limit; t++) if (learner.take(t) === 0) learner.accept(t + 1, t);
    const paused = learner.rateAt(t);
    // Five seconds with nothing to send: a probe no send tested is no reason to go unlimited.
    expect(learner.paceAt(t + 5_000)).toBeLessThan(2 * paused);
    // Back to sending, the probe goes on from there.
    for (let s = t + 5_000; s < t + 5_300; s++) if (learner.take(s) === 0) learner.accept(s + 1, s);
    expect(learner.rateAt(t + 5_300)).toBeGreaterThan(2 * paused);
  });

  it("ends a trial its answers cannot decide once a second passed with no 429: the rate climbs again", () => {
    // 500 accepted a second, and 4 429s at once: an episode whose share (under 1 %) a cut cannot be
    // told from, as no 429 comes after it either.
    const learner = new SendRate(settings);
    for (let t = 0; t < 2_000; t += 2) learner.accept(t + 2, t);
    const verdicts: (RateVerdict | undefined)[] = [];
    for (let t = 1_990; t < 1_994; t++) verdicts.push(learner.limit(t + 2, t));
    for (let t = 1_994; t < 2_200; t += 2) verdicts.push(learner.accept(t + 2, t));
    const cut = verdicts.find((v) => v?.kind === "cut") as { rate: number } | undefined;
    expect(cut).toBeDefined();
    const rate = learner.rateAt(2_200);
    for (let t = 2_200; t < 8_000; t += 1_000 / 400) learner.accept(t + 2, t); // no 429 at the new rate
    expect(learner.rateAt(8_000)).toBeGreaterThan(rate * 1.5);
  });

  it("takes for background, in a probe, the 429s its sends got while held below the limit, which no trial at a few dozen a second tells from a limit's: a lifted limit holds the rate less long", () => {
    // 50/s (a burst of 5) until 5 s, then no limit; 3 % of sends get 429 whatever the rate. At the
    // old limit's rate the scattered 429s come one or two a second: a probe meets two within a
    // second long before it gets far, and no trial tells them from its episode's share.
    const lifted = (seed: number): Service => {
      const bucket = tokenBucket((at) => (at < 5_000 ? 50 : 1_000_000), 5);
      const noise = scattered(0.03, seed);
      return (at, resend) => (noise(at, resend) === "limited" ? "limited" : bucket(at, resend));
    };
    const afterLift = (learn: boolean, seed: number) =>
      simulate(lifted(seed), { ms: 10_000, learn, latencyMs: 15 }).done - simulate(lifted(seed), { ms: 5_000, learn, latencyMs: 15 }).done;
    const ratios = Array.from({ length: 12 }, (_, i) => afterLift(true, i + 1) / afterLift(false, i + 1));
    // Each probe stopped at the scattered 429s: 0.40 x the loop's jobs (0.53 x where it takes them for background).
    expect(ratios.reduce((a, b) => a + b, 0) / ratios.length).toBeGreaterThan(0.5);
  });

  it("takes no limit's 429s for background in a probe: those its sends got held below it count once a cluster, and one is no share", () => {
    // 200/s with a burst of 20; once the rate is held below it (under 196/s: at a cut, 97 % of the
    // limit), a few sends in a row get 429 (a limit that dipped for a moment, as a step down's
    // first 429s come before its episode opens).
    const run = (cluster: number) => {
      const learner = new SendRate(settings);
      const bucket = tokenBucket(() => 200, 20);
      let left = cluster;
      const service: Service = (at, resend) => {
        if (left > 0 && at >= 3_000 && learner.rateAt(at) < 196) {
          left--;
          return "limited";
        }
        return bucket(at, resend);
      };
      return simulate(service, { ms: 15_000, learner });
    };
    const [none, clustered] = [run(0), run(6)];
    // The cluster's own 6 and a few from the cut it makes; taken for background, the limit's
    // 429s in every probe after it: 45 more.
    expect(clustered.limited - none.limited).toBeLessThanOrEqual(6 + 4);
  });

  it("steps a probe back at its first episode, not to what a burst allowance let through", () => {
    const { limit, before, back } = probeSteppedBack(1_000); // a burst allowance
    expect(back).toBeLessThan(0.6 * before); // half the probe, not 0.9 x the 1,000/s of the burst
    expect(back).toBeGreaterThanOrEqual(limit);
  });

  it("after a step back the service accepts nearly all of, cuts just under the rate stepped back to", () => {
    // Sends at the rate stepped back to, answered 2 ms later; the one 429 among them, the 15th, was
    // the probe's burst running out. The episode measures 14 accepted in 15 intervals.
    const accepted = probeSteppedBack(300); // the probe's rate: what accepted sends show
    const interval = 1000 / accepted.back;
    let verdict: RateVerdict | undefined;
    for (let i = 1; !verdict; i++) {
      const sentAt = accepted.at + i * interval;
      verdict = i === 15 ? accepted.learner.limit(sentAt + 2, sentAt) : accepted.learner.accept(sentAt + 2, sentAt);
    }
    expect(verdict).toMatchObject({ kind: "cut", limit: accepted.back });
    expect((verdict as { rate: number }).rate).toBeCloseTo(accepted.back * settings.decrease, 5);

    // A limit that came down meanwhile: every other send refused. The rule does not hide it.
    const refused = probeSteppedBack(300);
    verdict = undefined;
    for (let i = 1; !verdict; i++) {
      const sentAt = refused.at + i * interval;
      verdict = i % 2 ? refused.learner.limit(sentAt + 2, sentAt) : refused.learner.accept(sentAt + 2, sentAt);
    }
    expect(verdict).toMatchObject({ kind: "cut" });
    expect((verdict as { limit: number }).limit).toBeLessThan(0.6 * refused.back);

    // A batch that sent a third of the rate stepped back to (its jobs waiting out Retry-Afters): the
    // service accepted all it sent, so the probe's one 429 was its burst or a scattered one.
    const fewer = probeSteppedBack(300);
    verdict = undefined;
    for (let i = 1; !verdict; i++) {
      const sentAt = fewer.at + 3 * i * interval;
      verdict = fewer.learner.accept(sentAt + 2, sentAt);
    }
    expect(verdict).toMatchObject({ kind: "cut", limit: fewer.back });
    expect((verdict as { rate: number }).rate).toBeCloseTo(fewer.back * settings.decrease, 5);
  });

  it("spaces sends at the rate, 20 ms worth at most at once", () => {
    const learner = new SendRate(settings);
    for (let t = 0; t < 1_000; t += 20) learner.accept(t + 1, t); // 50 per second
    let now = 1_000;
    while (learner.rateAt(now) === Number.POSITIVE_INFINITY) learner.limit(now++, 999); // until the episode opens
    const rate = learner.rateAt(now);
    expect(rate).toBeGreaterThan(40); // what the service accepted just before, a little below
    expect(rate).toBeLessThan(50);
    let granted = 0;
    let longestBurst = 0;
    for (let t = now, burst = 0; t < now + 1_000; t++, burst = 0) {
      while (learner.take(t) === 0) burst++;
      granted += burst;
      longestBurst = Math.max(longestBurst, burst);
    }
    expect(granted).toBeGreaterThanOrEqual(Math.floor(rate) - 1);
    expect(granted).toBeLessThanOrEqual(Math.ceil(rate * 1.02) + 1); // the rate climbs back slowly
    expect(longestBurst).toBe(1);
  });

  it("spaces sends at a share of the rate, for a process of a fleet pacing on its own", () => {
    const learner = new SendRate(settings);
    for (let t = 0; t < 1_000; t += 5) learner.accept(t + 1, t); // 200 per second
    let now = 1_000;
    while (learner.rateAt(now) === Number.POSITIVE_INFINITY) learner.limit(now++, 999);
    const rate = learner.rateAt(now);
    let granted = 0;
    for (let t = now; t < now + 1_000; t++) while (learner.take(t, 1 / 4) === 0) granted++;
    expect(granted).toBeGreaterThanOrEqual(Math.floor(rate / 4) - 1);
    expect(granted).toBeLessThanOrEqual(Math.ceil((rate * 1.02) / 4) + 1);
  });

  it("says persistent when nearly every send after a cut still gets 429, whatever the rate", () => {
    const run = simulate((at) => (at < 1_000 || at % 20 === 0 ? "accepted" : "limited"), { ms: 6_000, retryAfterMs: 50 });
    expect(run.verdicts.some((v) => v.kind === "persistent")).toBe(true);
  });
});
