/**
 * The report's "Carry-over" section: each arm after each preceding arm against the same arm after
 * itself (or after the others) (orchestrator/stats/carry-over.ts), flagged in bold when large,
 * shown unasked. A leave-one-out of eight arms has over fifty cells: the table lists the flagged
 * ones, or the largest few when none is, and report.json holds them all.
 */
import { pValue, signedPct } from '../stats/format-number.ts';
import type { CarryOver, CarryOverCell } from '../stats/types.ts';
import { markdownTable } from './markdown-table.ts';

/** Cells listed when none is flagged: the largest effects. */
const LARGEST_SHOWN = 4;

export function carryOverSection(c: CarryOver): string[] {
  const size = (x: CarryOverCell) => (x.effect === null ? -1 : Math.abs(x.effect));
  const shown = c.flagged
    ? c.cells.filter((x) => x.flagged)
    : [...c.cells].sort((a, b) => size(b) - size(a)).slice(0, LARGEST_SHOWN);
  const which = c.flagged ? 'the flagged cells' : `the ${shown.length} largest of ${c.cells.length} cells`;
  return [
    '## Carry-over (arm × preceding arm)',
    '',
    c.flagged ? `**${c.message}**` : c.message,
    '',
    `Listed: ${which} (every cell in report.json, \`carry_over\`).`,
    '',
    markdownTable(
      ['arm', 'after', 'reps', 'against', 'effect', 'median rep', 'p', 'flagged'],
      shown.map((x) => [
        x.arm,
        x.after,
        String(x.n),
        x.against,
        signedPct(x.effect),
        signedPct(x.median_effect),
        pValue(x.p),
        x.flagged ? '**yes**' : 'no',
      ]),
    ),
    '',
  ];
}
