/**
 * Which reference each comparison was paired with, and why (orchestrator/stats/reference-arm.ts):
 * the comparisons with the control use the analysis's reference choice (the control pooled with
 * its A/A twin, or the control alone); the A/A control itself is judged on the raw reps of both.
 */
import type { Analysis, Comparison } from '../stats/types.ts';

/** The reference of one comparison as the report's table names it. */
export function referenceUsed(a: Pick<Analysis, 'aa' | 'reference'>, c: Comparison): string {
  const choice = a.reference;
  if (choice === null || choice === undefined || c === a.aa) return `${c.reference} (raw reps)`;
  if (c.reference !== choice.control && c.arm !== choice.control) return `${c.reference} (raw reps)`;
  return choice.kind === 'pooled' ? `${choice.control} + ${choice.twin} pooled` : `${choice.control} alone`;
}

/** The report's account of the reference: what it is, why, and every rep set aside with its reason. */
export function referenceLines(a: Pick<Analysis, 'reference'>): string[] {
  const choice = a.reference;
  if (choice === null || choice === undefined) return [];
  return [
    `Reference of every comparison with ${choice.control}: ${choice.why}.`,
    '',
    ...choice.set_aside.map(
      (s) => `- set aside: ${s.arm} block ${s.block} rep ${s.rep} (${s.value.toPrecision(4)}): ${s.reason}`,
    ),
    ...(choice.set_aside.length > 0 ? [''] : []),
  ];
}
