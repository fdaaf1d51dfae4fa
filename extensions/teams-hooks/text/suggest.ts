/**
 * "Did you mean": the name closest to one that is almost right (a command, a flag, an event, a gate's
 * file name). No imports, so that the command line can use it before it loads anything else.
 */

/** The candidate closest to `word` (edit distance, ignoring case), if it is within `max` edits. */
export function closestName(word: string, candidates: readonly string[], max = 3): string | null {
  let best: string | null = null;
  let bestDistance = max + 1;
  for (const candidate of candidates) {
    const d = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

/** Levenshtein distance (insertions, deletions, substitutions), one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost));
    }
    previous = row;
  }
  return previous[b.length] ?? 0;
}

/** ` (did you mean X?)` when a candidate is close enough, else "". */
export function didYouMean(word: string, candidates: readonly string[], max = 3): string {
  const closest = closestName(word, candidates, max);
  return closest === null ? "" : ` (did you mean ${closest}?)`;
}
