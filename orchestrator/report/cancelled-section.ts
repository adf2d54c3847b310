/**
 * The report's "Cancelled" section: when `orch cancel` cut the plan short, one line per arm with
 * its measured and cancelled reps — the numbers above rest on the measured ones only.
 */
import type { CancelledArm } from '../stats/types.ts';

export function cancelledSection(a: { cancelled?: CancelledArm[] | undefined }): string[] {
  const arms = a.cancelled ?? [];
  if (arms.length === 0) return [];
  const cancelled = arms.reduce((s, x) => s + x.cancelled, 0);
  const planned = arms.reduce((s, x) => s + x.planned, 0);
  return [
    '## Cancelled',
    '',
    `The experiment was cancelled: ${cancelled} of ${planned} planned reps did not run; everything above uses the measured reps only.`,
    '',
    ...arms.map((x) => `- arm ${x.arm}: ${x.measured} measured, ${x.cancelled} cancelled (of ${x.planned} planned)`),
    '',
  ];
}
