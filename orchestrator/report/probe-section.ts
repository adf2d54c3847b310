/**
 * The report's probe section (design probe): which self-check held on how many rank-reps, per
 * rep and rank the launch counter, graph nodes against launches, L, P and win of the pinned train
 * step and the instantiate time, then the capture errors by class.
 */
import { num } from '../stats/format-number.ts';
import type { CaptureErrorClass, ProbeSummary } from '../stats/probe-summary.ts';
import { markdownTable } from './markdown-table.ts';

const CLASS_TEXT: Record<CaptureErrorClass, string> = {
  'expected-refusal': 'refused by name, as it must be',
  'accepted-not-refused': '**accepted: a capture that must be refused went through**',
  'other-refusal': '**refused under another name**',
  'probe-error': '**the probe itself failed**',
};

const opt = (x: number | null) => (x === null ? '—' : String(x));
const yesNo = (x: boolean | null) => (x === null ? '—' : x ? 'yes' : 'no');

export function probeSection(p: ProbeSummary): string[] {
  return [
    '## Capture probe',
    '',
    p.pass ? p.message : `**${p.message}**`,
    '',
    markdownTable(
      ['probe', 'passed', 'of'],
      p.by_probe.map((b) => [b.name, String(b.passed), String(b.of)]),
    ),
    '',
    markdownTable(
      [
        'block',
        'rep',
        'rank',
        'card',
        'launch counter (counted / expected)',
        'launches during replays',
        'graph nodes vs launches',
        'dispatches per replay',
        'L',
        'P',
        'win',
        'instantiate ms',
        'failed',
      ],
      p.rows.map((r) => [
        String(r.block),
        String(r.rep),
        String(r.rank),
        r.card,
        `${opt(r.launches_counted)} / ${opt(r.launches_expected)}`,
        opt(r.launches_during_replays),
        `${opt(r.graph_nodes)} vs ${opt(r.launches_counted)}${r.graph_nodes !== null && r.graph_nodes === r.launches_counted ? '' : ' **differ**'}`,
        opt(r.dispatches_per_replay),
        opt(r.L),
        opt(r.P),
        yesNo(r.win),
        r.instantiate_ms === null ? '—' : num(r.instantiate_ms, 4),
        r.failed.length === 0 ? '—' : r.failed.join(', '),
      ]),
    ),
    '',
    '### Capture errors',
    '',
    p.capture_errors.length === 0
      ? 'None reported.'
      : markdownTable(
          ['class', 'where', 'graphrt said', 'rank-reps'],
          p.capture_errors.map((e) => [CLASS_TEXT[e.class], e.where, e.said, String(e.count)]),
        ),
    '',
  ];
}
