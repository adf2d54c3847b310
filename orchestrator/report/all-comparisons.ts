import type { Analysis, Comparison } from '../stats/types.ts';

/** Every comparison of an analysis once: against the control, the primary, the A/A control. */
export function allComparisons(a: Pick<Analysis, 'comparisons' | 'primary' | 'aa'>): Comparison[] {
  const out: Comparison[] = [];
  for (const c of [...a.comparisons, a.primary, a.aa]) {
    if (c && !out.some((o) => o.arm === c.arm && o.reference === c.reference)) out.push(c);
  }
  return out;
}
