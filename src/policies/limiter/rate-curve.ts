/**
 * The shape of the send rate after a cut (CUBIC's): back to the measured limit, fast at first and
 * flat near it, then probing above it, slowly, then doubling once `PROBE_MARGIN` above it with no
 * 429 (the limit has moved). A quicker curve (a `stretch` under 1) returns and starts probing
 * sooner, but doubles no faster. A cut held at the floor, still above what the service accepted,
 * stays flat for a while instead (half of `recovery`, times the stretch).
 */

/** How far above the limit the cubic probe goes before it doubles, every `PROBE_DOUBLING_S` seconds. */
const PROBE_MARGIN = 0.02;
const PROBE_DOUBLING_S = 0.25;

/**
 * `rate(t) = limit * (1 + c * (t / stretch - k)^3)`, `t` in seconds since `at`; held at `limit`
 * before `at`.
 */
export interface Curve {
  readonly limit: number;
  readonly at: number;
  /** Seconds from `at` until the rate is back at `limit`, at a `stretch` of 1. */
  readonly k: number;
  /** How much longer than `recovery` this curve takes to return and start probing: 0.5 is twice as fast. */
  readonly stretch: number;
}

export class CurveShape {
  /** The cubic coefficient, per second cubed: a cut that halved the rate is made up in `recovery`. */
  private readonly c: number;
  /** Seconds after the return to the limit when the rate is `PROBE_MARGIN` above it. */
  private readonly probeAt: number;

  /**
   * @param recovery milliseconds back to the limit after a cut that halved the rate.
   * @param minRate the lowest rate, in sends per second.
   */
  constructor(
    private readonly recovery: number,
    private readonly minRate: number,
  ) {
    this.c = 0.5 / (recovery / 1000) ** 3;
    this.probeAt = Math.cbrt(PROBE_MARGIN / this.c);
  }

  /** Sends per second on `curve` at `now`; Infinity with no curve (unlimited). */
  rateAt(curve: Curve | undefined, now: number): number {
    if (!curve) return Number.POSITIVE_INFINITY;
    if (now < curve.at) return curve.limit; // held
    const t = (now - curve.at) / 1000 / curve.stretch - curve.k;
    // Seconds of doubling: a quicker curve reaches it sooner, but doubles no faster.
    const beyond = (t - this.probeAt) * curve.stretch;
    const rate = beyond <= 0 ? 1 + this.c * t ** 3 : (1 + PROBE_MARGIN) * 2 ** (beyond / PROBE_DOUBLING_S);
    return Math.max(this.minRate, curve.limit * rate);
  }

  /**
   * `curve` as it goes on from `now` after being held at its limit: a probe it would be past by now
   * starts afresh from the limit instead of jumping ahead.
   */
  released(curve: Curve, now: number): Curve {
    return this.rateAt(curve, now) > curve.limit ? { ...curve, at: now, k: 0 } : curve;
  }

  /**
   * The curve after a cut to `rate` at `now`, where the service accepted `goodput` sends per second,
   * its times scaled by `stretch`.
   */
  after(now: number, rate: number, goodput: number, stretch: number): Curve {
    // Held at the floor, the rate is still above what the service accepted: it waits there for the
    // next episode, rather than climb (as much quicker as the climb would be).
    if (rate > goodput) return { limit: rate, at: now + (this.recovery / 2) * stretch, k: 0, stretch };
    return { limit: goodput, at: now, k: Math.cbrt((1 - rate / goodput) / this.c), stretch };
  }
}
