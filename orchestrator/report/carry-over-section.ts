/**
 * The report's "Carry-over" section: each arm after each preceding arm against the same arm after
 * itself (or after the others) (orchestrator/stats/carry-over.ts), flagged in bold when large, shown unasked.
 */
import { pValue, signedPct } from '../stats/format-number.ts';
import type { CarryOver } from '../stats/types.ts';
import { markdownTable } from './markdown-table.ts';

export function carryOverSection(c: CarryOver): string[] {
  return [
    '## Carry-over (arm × preceding arm)',
    '',
    c.flagged ? `**${c.message}**` : c.message,
    '',
    markdownTable(
      ['arm', 'after', 'reps', 'against', 'effect', 'p', 'flagged'],
      c.cells.map((x) => [x.arm, x.after, String(x.n), x.against, signedPct(x.effect), pValue(x.p), x.flagged ? '**yes**' : 'no']),
    ),
    '',
  ];
}
