/**
 * The statistics a send-rate learner decides by: whether 429s stand clearly above a background
 * share, and what the answers after a cut say of it. Pure functions over counts.
 */

/** Answers, and the 429s among them. */
export interface Evidence {
  readonly answered: number;
  readonly limited: number;
}

/** The log-likelihood ratio that decides a trial (e^3: odds of 20 to 1), and the least answers it reads. */
const DECISIVE = 3;
export const MIN_JUDGED = 10;
/** The one-sided z of the binomial test, and the least background share it assumes. */
const Z = 3;
const MIN_BACKGROUND = 0.001;

/**
 * What the answers after a cut say of it: `real` when the share of 429s clearly rose (z >= 2: the
 * limit came down meanwhile), or when they fit a real limit at the goodput the episode measured (a
 * share of at most `expected`) clearly better than an unchanged share (a likelihood ratio over
 * `DECISIVE`); `background` when they clearly fit the unchanged share better; undefined while they
 * are too few to tell (fewer than `MIN_JUDGED`: a few resends accepted in a row say little).
 */
export function judge(
  { answered, limited }: Evidence,
  trial: { readonly share: number; readonly expected: number },
): "real" | "background" | undefined {
  if (answered < MIN_JUDGED) return undefined;
  if (rose({ answered, limited }, trial.share, 2)) return "real";
  const likelihood = (share: number) => limited * Math.log(clamp(share)) + (answered - limited) * Math.log(1 - clamp(share));
  // A goodput measured from few sends errs low, so a real limit leaves at most `expected`.
  const ratio = likelihood(Math.min(trial.expected, limited / answered)) - likelihood(trial.share);
  return ratio > DECISIVE ? "real" : ratio < -DECISIVE ? "background" : undefined;
}

/**
 * True when the answers after a cut hold clearly more 429s than the `share` before it (a one-sided
 * binomial test at `z`): the limit came down meanwhile.
 */
export function rose({ answered, limited }: Evidence, share: number, z = Z): boolean {
  if (answered < MIN_JUDGED) return false;
  const p = clamp(share);
  const expected = answered * p;
  return (limited - expected) / Math.sqrt(expected * (1 - p)) >= z;
}

const clamp = (share: number) => Math.min(0.99, Math.max(0.01, share));

/** True when the evidence holds clearly more 429s than a `background` share would give (one-sided binomial test). */
export function significant({ answered, limited }: Evidence, background: number): boolean {
  const p = Math.max(background, MIN_BACKGROUND);
  return limited >= 2 && limited > answered * p + Z * Math.sqrt(answered * p * (1 - p)) + 1;
}

/** True when the share of 429s in `a` is clearly higher than in `b` (a two-proportion z-test). */
export function clearlyHigher(a: Evidence, b: Evidence): boolean {
  const pooled = (a.limited + b.limited) / (a.answered + b.answered);
  const spread = Math.sqrt(pooled * (1 - pooled) * (1 / a.answered + 1 / b.answered));
  return a.limited / a.answered - b.limited / b.answered >= Z * spread && spread > 0;
}
