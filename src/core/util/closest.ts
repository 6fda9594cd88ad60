// "Did you mean": the nearest of a few names to what a person typed (an option, a command, a
// module, a parameter). One rule for the CLI and the design's error messages.

/** The candidate nearest to `typed` (a prefix of it, or within a small edit distance), if any. */
export function closest(typed: string, candidates: string[]): string | undefined {
  const t = typed.toLowerCase();
  const bare = (s: string): string => s.replace(/^-+/, '');
  const prefixed = candidates.filter((c) => bare(t).length >= 3 && bare(c).startsWith(bare(t)));
  if (prefixed.length === 1) return prefixed[0];
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const d = editDistance(t, c.toLowerCase());
    if (d < bestD) [best, bestD] = [c, d];
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(bare(t).length / 3)) && bestD < bare(t).length ? best : undefined;
}

/** Levenshtein distance. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}
