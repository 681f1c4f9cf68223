/**
 * "Did you mean …?" for the CLI: the nearest of a few known words (flags, commands, tool names) by
 * edit distance.
 */

/**
 * Edit distance between `a` and `b`: insertions, deletions, substitutions and transpositions of two
 * adjacent characters each cost 1 (optimal string alignment, a restricted Damerau-Levenshtein).
 */
export function editDistance(a: string, b: string): number {
  // rows[i][j]: distance between the first i characters of a and the first j of b.
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      row.push(d);
    }
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}

/**
 * The candidate nearest to `word`, or `undefined` when none is close: at most 2 edits, and fewer
 * than half of `word`'s length (so `-x` does not suggest `-h`). Ties go to the earlier candidate.
 */
export function nearest(word: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.min(2, Math.ceil(word.length / 2) - 1);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (d <= limit && d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}
