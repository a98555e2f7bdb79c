/** A source of uniform numbers in [0, 1). */
export type Random = () => number;

/**
 * mulberry32: a small, fast 32-bit PRNG, good enough for a simulation, so that one seed replays
 * one run exactly.
 */
export function mulberry32(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A uniform number in [min, max). */
export function uniform(random: Random, min: number, max: number): number {
  return min + random() * (max - min);
}

/** A number in [min, max) whose logarithm is uniform: as many limits near 2/s as near 2000/s. */
export function logUniform(random: Random, min: number, max: number): number {
  return Math.exp(uniform(random, Math.log(min), Math.log(max)));
}

/** A uniform integer in [min, max], both included. */
export function integer(random: Random, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

/** One of `choices`, each as likely. */
export function pick<T>(random: Random, choices: readonly T[]): T {
  return choices[Math.floor(random() * choices.length)] as T;
}

/** A seed for stream `stream` of run `seed`, so that the streams of one run do not overlap. */
export function substream(seed: number, stream: number): number {
  return Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(stream + 1, 0xc2b2ae35);
}
