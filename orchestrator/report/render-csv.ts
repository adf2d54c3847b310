/**
 * CSV tables of an Analysis (RFC 4180 quoting, one header row, empty cell = not computable):
 * reps (one row per used rep), arms, comparisons, loo, drift. Relative numbers are fractions.
 */

import type { Analysis } from '../stats/types.ts';
import { allComparisons } from './all-comparisons.ts';
import { referenceUsed } from './reference-used.ts';

export interface CsvTables {
  reps: string;
  arms: string;
  comparisons: string;
  loo: string;
  drift: string;
}

type Cell = string | number | boolean | null | undefined;

function field(x: Cell): string {
  if (x === null || x === undefined || (typeof x === 'number' && !Number.isFinite(x))) return '';
  const s = String(x);
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

export function toCsv(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  return `${[headers, ...rows].map((r) => r.map(field).join(',')).join('\n')}\n`;
}

export function renderCsv(a: Analysis): CsvTables {
  const comps = allComparisons(a);
  return {
    reps: toCsv(
      ['experiment', 'block', 'arm', 'rep', 'position', 'value', 'throttled', 'reruns'],
      a.values.map((v) => [
        a.experiment,
        v.block,
        v.arm,
        v.rep,
        v.position,
        v.value,
        (v.throttled ?? []).join('; '),
        v.reruns ?? 0,
      ]),
    ),
    arms: toCsv(
      [
        'arm',
        'aa_of',
        'n',
        'planned',
        'missing',
        'mean',
        'median',
        'sd',
        'sem',
        'ci_low',
        'ci_high',
        'min',
        'max',
        'cv',
        'not_measured',
      ],
      a.arms.map((s) => [
        s.arm,
        s.aa_of,
        s.n,
        s.planned,
        s.missing,
        s.mean,
        s.median,
        s.sd,
        s.sem,
        s.ci?.[0],
        s.ci?.[1],
        s.min,
        s.max,
        s.cv,
        s.unsupported.map((u) => u.note).join('; '),
      ]),
    ),
    comparisons: toCsv(
      [
        'arm',
        'reference',
        'reference_used',
        'pairs',
        'relative',
        'relative_ci_low',
        'relative_ci_high',
        'difference',
        'difference_se',
        't',
        'df',
        'p',
        'wilcoxon_p',
        'verdict',
        'bound',
        'mde',
        'statement',
        'sequential_look',
      ],
      comps.map((c) => [
        c.arm,
        c.reference,
        referenceUsed(a, c),
        c.pairs,
        c.relative.estimate,
        c.relative.ci?.[0],
        c.relative.ci?.[1],
        c.absolute.mean,
        c.absolute.se,
        c.log_ratio.t,
        c.log_ratio.df,
        c.log_ratio.p,
        c.wilcoxon.p,
        c.verdict,
        c.bound,
        c.mde,
        c.statement,
        c.sequential_look,
      ]),
    ),
    loo: toCsv(
      ['toggle', 'arm', 'worth', 'worth_se', 'worth_rel', 'worth_rel_se', 't', 'df', 'p', 'share', 'unsupported'],
      (a.loo?.rows ?? []).map((r) => [
        r.toggle,
        r.arm,
        r.worth,
        r.worth_se,
        r.worth_rel,
        r.worth_rel_se,
        r.t,
        r.df,
        r.p,
        r.share,
        r.unsupported,
      ]),
    ),
    drift: toCsv(
      ['arm', 'slope_per_position', 'se', 't', 'df', 'p', 'flagged'],
      a.drift.map((d) => [d.arm, d.slope, d.se, d.t, d.df, d.p, d.flagged]),
    ),
  };
}
