/**
 * The report's card-time section: per committed block, how much of its leased time was
 * measurement (orchestrator/stats/busy-share.ts defines each column).
 */
import { num, pct } from '../stats/format-number.ts';
import type { BusyShareRow } from '../stats/busy-share.ts';
import { markdownTable } from './markdown-table.ts';

export function renderBusyShare(rows: readonly BusyShareRow[]): string {
  if (rows.length === 0) return '';
  const table = markdownTable(
    ['block', 'attempt', 'reps', 'leased', 'start-up (ranks ready + gates)', 'steps', 'step share (measured)', 'busy share (warm-up + measured)', 'rep share', 'gap p50', 'gap p99'],
    rows.map((r) => [
      String(r.block), String(r.attempt), String(r.reps), `${num(r.leased_ms / 1000, 3)} s`,
      r.startup_ms === null ? '—' : `${num(r.startup_ms / 1000, 3)} s (${num((r.ready_ms as number) / 1000, 3)} + ${num((r.gates_ms as number) / 1000, 3)})`,
      `${num(r.step_ms / 1000, 3)} s`, pct(r.step_share, 1), pct(r.busy_share, 1), pct(r.rep_share, 1),
      r.gap_p50_ms === null ? '—' : `${num(r.gap_p50_ms, 3)} ms`, r.gap_p99_ms === null ? '—' : `${num(r.gap_p99_ms, 3)} ms`,
    ]),
  );
  return [
    '## Card time',
    '',
    'Leased: block-start to block-committed (Redis clock). Start-up: block-start to the last rank\'s hello (ranks ready: foreign-process look, process start, backend) plus the identity gates (to the last gate line), same clock. Step share: measured steps / leased. Busy share: warm-up and measured steps / leased. Rep share: the reps\' spans on the ranks\' clock (capture, warm-up, steps) / leased. Gap: one rep\'s end to the next one\'s start.',
    '',
    table,
    '',
  ].join('\n');
}
