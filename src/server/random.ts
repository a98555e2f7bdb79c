/** A source of numbers in [0, 1), like `Math.random`, but repeatable. */
export type Random = () => number;

/**
 * mulberry32: a small seeded PRNG (32-bit state). Two servers with the same seed that receive the
 * same requests in the same order make the same fault decisions.
 */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return function mulberry32() {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** True with the given probability (0..1). Draws only when the answer is not already certain. */
export function chance(random: Random, probability: number): boolean {
  if (probability >= 1) return true;
  if (probability <= 0) return false;
  return random() < probability;
}
