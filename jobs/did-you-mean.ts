/** Levenshtein distance (insert, delete, substitute; each costs 1). */
export function levenshtein(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      // prev holds b.length + 1 entries and cur j of them: every index read here is in range
      const sub = (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      cur.push(Math.min(sub, (prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1));
    }
    prev = cur;
  }
  return prev[b.length] ?? 0;
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
  if (bestDistance <= limit) return best;
  // A word that contains a candidate, or is contained in one ("hostname" for "host").
  const w = word.toLowerCase();
  return candidates.find((c) => c.length >= 3 && (w.includes(c.toLowerCase()) || c.toLowerCase().includes(w)));
}

/**
 * `did you mean "pdl"?`; with no close candidate, `expected one of "a", "b"`. `listAll` adds
 * the allowed values after a suggestion, for small closed sets where a near miss can still be
 * the wrong word ("gpu" is one edit from "cpu" but meant "cuda").
 */
export function suggestion(word: string, candidates: readonly string[], listAll = false): string {
  const near = didYouMean(word, candidates);
  const all = candidates.map((c) => JSON.stringify(c)).join(', ');
  if (near === undefined) return `expected one of ${all}`;
  return listAll ? `did you mean "${near}"? (one of ${all})` : `did you mean "${near}"?`;
}
