/**
 * The human report of one experiment. Reading order is the order of trust: why the result is
 * invalid (if it is) comes first, then the verdict, the gates, the arms, the comparisons, the
 * leave-one-out table, and the checks on the measurement itself (order, drift, input).
 * Every number goes through format-number.ts: a missing quantity prints "—", never NaN.
 */
import { num, pct, pValue, signedPct } from '../stats/format-number.ts';
import type { Analysis, Comparison } from '../stats/types.ts';
import { allComparisons } from './all-comparisons.ts';
import { backendLine } from './backend-line.ts';
import { cancelledSection } from './cancelled-section.ts';
import { captureBlockersSection } from './capture-blockers-section.ts';
import { carryOverSection } from './carry-over-section.ts';
import { failedOutputSection } from './failed-output-section.ts';
import { markdownText } from './markdown-code.ts';
import { markdownTable } from './markdown-table.ts';
import { exitCodeLine, exitCodesSection, stoppedLines } from './outcome-lines.ts';
import { probeSection } from './probe-section.ts';
import { referenceLines, referenceUsed } from './reference-used.ts';
import { renderProvenance } from './render-provenance.ts';
import { renderTrace } from './render-trace.ts';
import { sequentialSection } from './sequential-section.ts';

const gateResult = (pass: boolean | null) => (pass === null ? 'n/a' : pass ? 'pass' : '**FAIL**');

function ci(c: [number, number] | null, f: (x: number) => string): string {
  return c === null ? '—' : `${f(c[0])} to ${f(c[1])}`;
}

function comparisonRow(a: Analysis, c: Comparison, unit: string): string[] {
  return [
    c.arm,
    c.reference,
    referenceUsed(a, c),
    String(c.pairs),
    signedPct(c.relative.estimate),
    c.sequential_look === undefined
      ? ci(c.relative.ci, (x) => signedPct(x))
      : `${ci(c.relative.ci, (x) => signedPct(x))} (repeated, look ${c.sequential_look})`,
    `${num(c.absolute.mean)} ${unit}`,
    num(c.log_ratio.t, 3),
    pValue(c.log_ratio.p),
    pValue(c.wilcoxon.p),
    c.verdict === 'invalid' || c.verdict === 'inconclusive' ? c.verdict : `**${c.verdict}**`,
  ];
}

const COMPARISON_HEADERS = [
  'arm',
  'vs',
  'reference used',
  'pairs',
  'change',
  `CI`,
  'Δ',
  't',
  'p',
  'Wilcoxon p',
  'verdict',
];

/** What the sequential primary comparison's row holds: the look's numbers, its repeated CI, no p. */
function sequentialPrimaryLines(comps: readonly Comparison[]): string[] {
  const c = comps.find((x) => x.sequential_look !== undefined);
  if (c === undefined) return [];
  return [
    `${c.arm} vs ${c.reference} is decided by the sequential looks: its row is look ${c.sequential_look}'s (the deciding look, else the last): the pairs, change and t of the blocks that look saw, its repeated CI, and no p (a fixed-design p does not apply to a sequential decision). Its fixed-design view of every committed block is below, said as such.`,
    '',
  ];
}

export function renderMarkdown(a: Analysis): string {
  const unit = a.metric.name;
  const level = `${Math.round((1 - a.alpha) * 100)} %`;
  const out: string[] = [];
  out.push(`# ${a.experiment}: ${a.verdict.toUpperCase()}`, '');
  out.push(...stoppedLines(a));
  // why it failed, in the program's own words, before anything measured
  out.push(...failedOutputSection(a));
  out.push(...captureBlockersSection(a));
  if (a.invalid_reasons.length > 0) {
    out.push(
      '**Invalid — no verdict can be believed:**',
      '',
      ...a.invalid_reasons.map((r) => `- ${markdownText(r)}`),
      '',
    );
  }
  // an experiment that ended early shows what it measured, never as its verdict
  if (a.primary)
    out.push(
      `**${a.primary.arm} vs ${a.primary.reference}${a.stopped ? ' (partial data, no verdict)' : ''}:** ${a.primary.statement}`,
      '',
    );
  out.push(
    `Plan ${a.plan.name} (${a.plan.design}, hash ${a.plan.hash}): ${planBlocksLine(a.plan)}, control ${a.plan.control}. ` +
      `Metric ${unit} (${a.metric.better} is better), rep value = ${a.metric.statistic} of its measured steps; ` +
      `alpha ${a.alpha}, min_effect ${pct(a.min_effect)}. ${exitCodeLine(a)}`,
    '',
    backendLine(a),
    '',
    ...renderProvenance(a),
  );

  out.push(
    '## Gates',
    '',
    markdownTable(
      ['gate', 'result', 'detail'],
      a.gates.map((g) => [g.name, gateResult(g.pass), g.message]),
    ),
    '',
  );

  out.push(
    `## Arms (${unit})`,
    '',
    markdownTable(
      ['arm', 'n', 'planned', 'missing', 'mean', 'median', 'sem', `${level} CI`, 'min', 'max', 'CV', 'not measured'],
      a.arms.map((s) => [
        s.aa_of ? `${s.arm} (A/A of ${s.aa_of})` : s.arm,
        String(s.n),
        String(s.planned),
        String(s.missing),
        num(s.mean),
        num(s.median),
        num(s.sem, 3),
        ci(s.ci, (x) => num(x)),
        num(s.min),
        num(s.max),
        pct(s.cv),
        s.unsupported.length === 0 ? '—' : s.unsupported.map((u) => u.note).join('; '),
      ]),
    ),
    '',
  );

  if (a.probe) out.push(...probeSection(a.probe));
  if (a.trace)
    out.push(
      renderTrace(
        a.trace.arms,
        a.trace.floor,
        a.trace.pass ? a.trace.message : `**${a.trace.message}**`,
        a.trace.graph_check,
      ),
    );
  if (a.sequential) out.push(...sequentialSection(a.sequential, a.min_effect));

  const comps = allComparisons(a);
  if (comps.length > 0) {
    out.push(
      '## Paired comparisons',
      '',
      `Each pair is an arm's k-th rep and the reference's k-th rep in the same block; change = exp(mean ln ratio) − 1 with its ${level} CI. ` +
        `A change counts only when the CI lies beyond ±${pct(a.min_effect)}.`,
      '',
      ...sequentialPrimaryLines(comps),
      ...referenceLines(a),
      markdownTable(
        COMPARISON_HEADERS,
        comps.map((c) => comparisonRow(a, c, unit)),
      ),
      '',
      ...comps.map((c) => {
        // Gate failures are already at the top of the report; do not repeat them per comparison.
        const own = c.reasons.filter((r) => !a.invalid_reasons.includes(r));
        return `- ${c.arm} vs ${c.reference}: ${c.statement}${own.length > 0 ? ` — ${markdownText(own.join('; '))}` : ''}`;
      }),
      '',
    );
  }

  if (a.loo) {
    out.push(
      '## Leave-one-out',
      '',
      `worth = no_<toggle> − all_on: what removing the toggle costs with all others on. base − all_on = ${num(a.loo.total)} ± ${num(a.loo.total_se)} ${unit} (${signedPct(a.loo.total_rel)}).`,
      '',
      markdownTable(
        [
          'toggle',
          `worth (${unit})`,
          `se (${unit})`,
          'worth %',
          'se %',
          't',
          'p',
          a.loo.share_withheld === null ? 'share of base − all_on' : 'share of base − all_on¹',
        ],
        a.loo.rows.map((r) =>
          r.unsupported !== null
            ? [r.toggle, r.unsupported, '—', '—', '—', '—', '—', '—']
            : [
                r.toggle,
                num(r.worth),
                num(r.worth_se, 3),
                signedPct(r.worth_rel),
                pct(r.worth_rel_se),
                num(r.t, 3),
                pValue(r.p),
                pct(r.share, 1),
              ],
        ),
      ),
      '',
      ...(a.loo.share_withheld === null ? [] : [`¹ No shares: ${a.loo.share_withheld}.`, '']),
      `${a.loo.interaction_flagged ? '**Interaction:** ' : 'Interaction check: '}${a.loo.message}`,
      '',
    );
  }

  if (a.order) {
    out.push(
      '## Order effects',
      '',
      a.order.flagged ? `**${a.order.message}**` : a.order.message,
      '',
      markdownTable(
        ['position', 'effect', 'n'],
        a.order.by_position.map((p) => [String(p.position), signedPct(p.effect), String(p.n)]),
      ),
      '',
    );
  }

  if (a.carry_over) out.push(...carryOverSection(a.carry_over));

  if (a.drift.length > 0) {
    out.push(
      '## Drift over run position',
      '',
      markdownTable(
        ['arm', 'slope per position', 'se', 't', 'p', 'flagged'],
        a.drift.map((d) => [
          d.arm,
          signedPct(d.slope, 3),
          pct(d.se, 3),
          num(d.t, 3),
          pValue(d.p),
          d.flagged ? '**yes**' : 'no',
        ]),
      ),
      '',
    );
  }

  out.push(...cancelledSection(a));
  const allUsed = a.issues.length === 0 && (a.cancelled ?? []).length === 0;
  out.push(
    '## Input',
    '',
    ...(allUsed
      ? ['Every planned rep was measured and used.']
      : a.issues.length === 0
        ? ['Every measured rep was used.']
        : a.issues.map((i) => `- ${markdownText(i)}`)),
    '',
  );
  out.push(...exitCodesSection());
  return out.join('\n');
}

/** "2 block(s) × 5 rep(s) per arm", or with auto sizing the first block's reps and the sized blocks after it. */
function planBlocksLine(p: Analysis['plan']): string {
  if (p.block_sizing === undefined) return `${p.blocks} block(s) × ${p.reps} rep(s) per arm`;
  return `${p.blocks} block(s): the first of ${p.reps} rep(s) per arm, then ${p.block_sizing.sizes.length} sized by blocks.reps_per_block: auto, ${p.block_sizing.statement}`;
}
