/**
 * The report's "Sequential looks" section (stopping: sequential): every look at the primary
 * comparison — the blocks it saw, its pairs, the alpha-spending boundary, the repeated CI and the
 * decision — so a reader sees where the experiment stopped and why (orchestrator/stats/sequential.ts).
 */

import { pct, signedPct } from '../stats/format-number.ts';
import type { SequentialOutcome } from '../stats/sequential-looks.ts';
import { markdownTable } from './markdown-table.ts';

export function sequentialSection(s: SequentialOutcome, minEffect: number): string[] {
  const table = markdownTable(
    ['look', 'blocks', 'information', 'pairs', 'boundary z', 't critical', 'estimate', 'repeated CI', 'decision'],
    s.looks.map((l, i) => [
      String(i + 1),
      `${l.blocks.length} of ${s.max_blocks}`,
      pct(l.fraction, 0),
      String(l.pairs),
      l.boundary === null ? 'none' : l.boundary.toFixed(3),
      l.critical === null ? '—' : l.critical.toFixed(3),
      signedPct(l.estimate),
      l.rci === null ? '—' : `${signedPct(l.rci[0])} to ${signedPct(l.rci[1])}`,
      l.decision,
    ]),
  );
  const outcome =
    s.decided_at === null
      ? `no look decided: ${s.looks.length} look(s) so far`
      : `look ${s.decided_at} decided **${s.decision}**`;
  // a look that could not stop says why, never "Infinity" (orchestrator/stats/sequential.ts decideLook)
  const notes = [
    ...(s.looks.some((l) => l.boundary === null)
      ? [
          'A look with boundary "none" spends no alpha (under 2 pairs, or the spending function gives it nothing): it cannot stop the experiment.',
        ]
      : []),
    ...(s.looks.some((l) => l.boundary !== null && l.estimate !== null && l.rci === null)
      ? [
          'A repeated CI "—" beside a boundary is unbounded at that look (too few pairs for its critical value): that look cannot stop the experiment.',
        ]
      : []),
  ];
  return [
    '## Sequential looks',
    '',
    `Looks at block boundaries, each against an O'Brien–Fleming-type alpha-spending boundary that keeps the two-sided type-I error at alpha over every look; a repeated CI wholly beyond ±${pct(minEffect)} decides faster or slower, wholly inside it equivalent. ${outcome}.`,
    '',
    table,
    '',
    ...(notes.length === 0 ? [] : [notes.join(' '), '']),
  ];
}
