/**
 * Levenshtein distance between two strings: the fewest one-character insertions, deletions and
 * substitutions that turn `a` into `b`.
 */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The candidate nearest to `name` by edit distance, ignoring case, if near enough to be a slip (at
 * most a third of the longer name's length, or 2); the first listed wins a tie.
 */
export function nearest(name: string, candidates: readonly string[]): string | undefined {
  let best: { readonly candidate: string; readonly distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    const slip = Math.max(2, Math.ceil(Math.max(name.length, candidate.length) / 3));
    if (distance <= slip && (best === undefined || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}
