/**
 * The report's card-time section: per committed block and card, how much of its leased time was
 * measurement (orchestrator/stats/busy-share.ts defines each column), and the rank timestamps set
 * aside as impossible, each with its reason.
 */

import type { BusyShareRow } from '../stats/busy-share.ts';
import { num, pct } from '../stats/format-number.ts';
import { markdownTable } from './markdown-table.ts';

export function renderBusyShare(rows: readonly BusyShareRow[]): string {
  if (rows.length === 0) return '';
  const table = markdownTable(
    [
      'block',
      'attempt',
      'card',
      'reps',
      'leased',
      'start-up (ranks ready + gates)',
      'steps',
      'step share (measured)',
      'busy share (warm-up + measured)',
      'rep share',
      'gap p50',
      'gap p99',
    ],
    rows.map((r) => [
      String(r.block),
      String(r.attempt),
      `${r.card} (rank ${r.rank})`,
      String(r.reps),
      `${num(r.leased_ms / 1000, 3)} s`,
      r.startup_ms === null
        ? '—'
        : `${num(r.startup_ms / 1000, 3)} s (${num((r.ready_ms as number) / 1000, 3)} + ${num((r.gates_ms as number) / 1000, 3)})`,
      `${num(r.step_ms / 1000, 3)} s`,
      pct(r.step_share, 1),
      pct(r.busy_share, 1),
      pct(r.rep_share, 1),
      r.gap_p50_ms === null ? '—' : `${num(r.gap_p50_ms, 3)} ms`,
      r.gap_p99_ms === null ? '—' : `${num(r.gap_p99_ms, 3)} ms`,
    ]),
  );
  const setAside = rows.flatMap((r) => r.set_aside);
  return [
    '## Card time',
    '',
    "From the committed reps, per card (each against its own lease, never ranks summed). Leased: block-start to the commit (the committing worker's clock). Start-up: block-start to every rank's hello (ranks ready: foreign-process look, process start, backend) plus the identity gates, same clock. Step share: the card's rank's measured steps / leased. Busy share: its warm-up and measured steps / leased. Rep share: its reps' spans on the rank's clock (capture, warm-up, steps) / leased. Gap: one rep's end to the next one's start on the card.",
    '',
    table,
    '',
    ...(setAside.length === 0
      ? []
      : [
          `Rank timestamps set aside as impossible (${setAside.length}; in neither rep share nor gaps):`,
          '',
          ...setAside.slice(0, 20).map((w) => `- ${w}`),
          ...(setAside.length > 20 ? [`- … and ${setAside.length - 20} more`] : []),
          '',
        ]),
  ].join('\n');
}
