/**
 * The report's "Launches" section (orchestrator/stats/launch-summary.ts defines each column): is
 * the program launch-bound, and did the graph arm replace its launches with one graph launch?
 */

import { countingCostSentence } from '../../jobs/counting-cost.ts';
import type { LaunchRow } from '../stats/launch-summary.ts';
import { markdownTable } from './markdown-table.ts';

const n = (x: number | null) => (x === null ? '—' : String(Math.round(x * 100) / 100));

export function renderLaunches(rows: readonly LaunchRow[]): string {
  if (rows.length === 0) return '';
  const table = markdownTable(
    [
      'arm',
      'mode',
      'reps',
      'kernel launches / step',
      'graph launches / step',
      'copies / step',
      'memsets / step',
      'syncs / step',
      'captured (graph nodes)',
      'counted by',
    ],
    rows.map((r) => [
      r.arm,
      r.modes.join(', '),
      String(r.reps),
      n(r.kernels_per_step),
      n(r.graphs_per_step),
      n(r.memcpy_per_step),
      n(r.memset_per_step),
      n(r.syncs_per_step),
      n(r.captured),
      r.source,
    ]),
  );
  return [
    '## Launches',
    '',
    "Per step (a timed step, or a warm-up step where `counted by` says so), the median over the arm's reps: eager kernel launches, graph launches, copies, memsets and synchronising calls; captured: kernel launches made while a stream was capturing (graphrt: the graph's nodes). Counted by graphrt's own launch counter, or by orch's CUPTI injection library in a user's program (ranklib/PROTOCOL.md): per step through a rank library (of the rep's warm-up steps, the same steps as its timed ones, where the library paused for the timed steps so that they run without CUPTI; of its timed steps where a rep has no warm-up or the library cannot pause); for a per_rep program, per NVTX range the spec names as its step (run.launch_counts_step_range), or else over the whole rep and divided by the steps it reported (its setup and warm-up included); `none` says why nothing was counted.",
    '',
    table,
    '',
    ...(rows.some((r) => r.source !== 'graphrt') ? [countingCostSentence(), ''] : []),
  ].join('\n');
}
