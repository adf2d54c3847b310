/**
 * The report's ranks section (multi-rank experiments only): per arm and rank the identity gate,
 * hashes against rank 0's, collectives per step, graph nodes and launches
 * (orchestrator/stats/rank-summary.ts defines each column).
 */
import type { RankRow } from '../stats/rank-summary.ts';
import { markdownTable } from './markdown-table.ts';

const list = (xs: readonly (number | string)[]) => (xs.length === 0 ? '—' : xs.join(', '));

export function renderRanks(rows: readonly RankRow[]): string {
  if (rows.length === 0) return '';
  const differ = rows.filter((r) => r.same_as_rank0 < r.compared);
  const table = markdownTable(
    [
      'arm',
      'rank',
      'identity gates passed',
      'reps',
      'mode',
      'hashes = rank 0',
      'collectives / step',
      'graph nodes',
      'launches / step',
    ],
    rows.map((r) => [
      r.arm,
      String(r.rank),
      r.gates === 0 ? '—' : `${r.gates_passed} / ${r.gates}`,
      String(r.reps),
      list(r.modes),
      r.compared === 0 ? '—' : `${r.same_as_rank0} / ${r.compared}${r.same_as_rank0 < r.compared ? ' **differ**' : ''}`,
      list(r.collectives_per_step),
      list(r.nodes),
      list(r.launches_per_step),
    ]),
  );
  return [
    '## Ranks',
    '',
    `Every line (identity gate: eager and graph hashes over capture + replays; rep: the measured steps' hashes) against rank 0's line of the same request. ${differ.length === 0 ? "Every rank holds rank 0's hashes." : `**${differ.length} arm × rank row(s) differ from rank 0.**`}`,
    '',
    table,
    '',
  ].join('\n');
}
