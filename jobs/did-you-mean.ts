/** Levenshtein distance (insert, delete, substitute; each costs 1). */
export function levenshtein(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const sub = (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      cur.push(Math.min(sub, (prev[j] as number) + 1, (cur[j - 1] as number) + 1));
    }
    prev = cur;
  }
  return prev[b.length] as number;
}

/**
 * The candidate closest to `word`, if it is close enough to be a plausible typo: at most
 * max(2, a third of the word's length) edits (case-insensitive). Ties go to the first candidate.
 */
export function didYouMean(word: string, candidates: readonly string[]): string | undefined {
  const limit = Math.max(2, Math.floor(word.length / 3));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = levenshtein(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return bestDistance <= limit ? best : undefined;
}

/** `did you mean "pdl"?` or, with no close candidate, `expected one of "a", "b"`. */
export function suggestion(word: string, candidates: readonly string[]): string {
  const near = didYouMean(word, candidates);
  if (near !== undefined) return `did you mean "${near}"?`;
  return `expected one of ${candidates.map((c) => JSON.stringify(c)).join(', ')}`;
}
