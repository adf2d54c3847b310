/**
 * The report's card-time section: per committed block and card, how much of its leased time was
 * measurement (orchestrator/stats/busy-share.ts defines each column), and the rank timestamps set
 * aside as impossible, each with its reason.
 */

import { escapeRankText } from '../../jobs/rank-text.ts';
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
  const starts = renderRankStarts(rows);
  return [
    '## Card time',
    '',
    "From the committed reps, per card (each against its own lease, never ranks summed). Leased: block-start to the commit (the committing worker's clock). Start-up: block-start to every rank's hello (ranks ready: foreign-process look, process start, backend) plus the identity gates, same clock. Step share: the card's rank's measured steps / leased. Busy share: its warm-up and measured steps / leased. Rep share: its reps' spans on the rank's clock (capture, warm-up, steps) / leased. Gap: one rep's end to the next one's start on the card.",
    '',
    table,
    '',
    ...starts,
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

const seconds = (ms: number | null): string => (ms === null ? '—' : `${num(ms / 1000, 3)} s`);

/** Each rank's start-up split by where it was paid, from the committed record (stats/startup-split.ts); nothing when no record says. */
function renderRankStarts(rows: readonly BusyShareRow[]): string[] {
  const said = rows.filter((r) => r.rank_start !== null);
  if (said.length === 0) return [];
  const table = markdownTable(
    [
      'block',
      'card',
      'started',
      'caches',
      'host phase (overlapped, not charged)',
      'in the lease',
      'the rest: process start, CUDA init',
      'setup',
      'prepare in the lease',
    ],
    said.map((r) => {
      const s = r.rank_start as NonNullable<BusyShareRow['rank_start']>;
      return [
        String(r.block),
        `${r.card} (rank ${r.rank})`,
        s.started === null ? '—' : s.why === null ? s.started : `${s.started}: ${escapeRankText(s.why)}`,
        s.caches ?? '—',
        seconds(s.host_phase_ms),
        seconds(s.in_lease_ms),
        seconds(s.cuda_init_ms),
        seconds(s.setup_ms),
        seconds(s.prepare_in_lease_ms),
      ];
    }),
  );
  return [
    "Start-up per rank, from the committed record: the host phase ran prepare() before the lease, while the card served the block before (not charged to the card); in the lease: block-start to the rank's hello, split into setup(), a prepare() that ran in the lease or was waited for there (a host-phase process whose start and prepare() outlasted the block before), and the rest (the worker's look for foreign processes, the process's start, CUDA init: what the program's clocks do not cover). Caches: the build's compiler caches (Inductor, Triton, CUDA JIT) held something when the rank started (warm) or not (cold).",
    '',
    table,
    '',
  ];
}
