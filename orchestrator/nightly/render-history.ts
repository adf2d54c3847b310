/**
 * `orch nightly status` and `orch nightly history` as text: the last runs with their state and
 * findings; and per comparison its rows with the change, CI, verdict and absolute numbers, a
 * sparkline of the change and one of the arm's absolute value over the nights, and where each
 * night ran under Slurm (its node change, when tonight's nodes differ from the night before).
 */
import type { NightlyRow, NightlyRun } from '../../history/history-store.ts';
import { signedPct } from './nightly-alert.ts';
import { placement } from './node-change.ts';
import { sparkline } from './sparkline.ts';

/** Where a row ran under Slurm and its node change, for a line of text; '' outside Slurm without a change. */
const where = (r: NightlyRow) =>
  `${r.slurm ? ` on ${placement(r)}` : ''}${r.node_change ? ` — node change: ${r.node_change}` : ''}`;

const iso = (t: number) => new Date(t).toISOString().replace('.000Z', 'Z');

export function renderRuns(runs: NightlyRun[], rowsByRun: Map<string, NightlyRow[]>): string {
  if (runs.length === 0) return 'no nightly runs recorded\n';
  return runs
    .map((r) => {
      const rows = rowsByRun.get(r.id) ?? [];
      const verdicts = rows
        .filter((x) => x.arm)
        .map(
          (x) =>
            `${x.spec_name ?? x.spec_file} ${x.arm} vs ${x.reference}: ${x.verdict} ${signedPct(x.change)}${x.finding ? ` [${x.finding}]` : ''}${where(x)}`,
        );
      const err = r.error ? `\n    error: ${r.error.split('\n').join('\n           ')}` : '';
      return `${r.suite} ${iso(r.scheduled_at)} ${r.state}${r.alerts ? `, ${r.alerts} alert${r.alerts > 1 ? 's' : ''}` : ''}${verdicts.map((v) => `\n    ${v}`).join('')}${err}\n`;
    })
    .join('');
}

export function renderHistory(suite: string, rows: NightlyRow[]): string {
  if (rows.length === 0) return `no rows recorded for suite ${suite}\n`;
  const series = new Map<string, NightlyRow[]>();
  for (const r of rows) {
    const key = r.arm
      ? `${r.spec_name ?? r.spec_file}: ${r.arm} vs ${r.reference}`
      : `${r.spec_name ?? r.spec_file}: (not run)`;
    series.set(key, [...(series.get(key) ?? []), r]);
  }
  let out = '';
  for (const [key, rs] of series) {
    out += `${key}\n  change ${sparkline(rs.map((r) => r.change))}   ${rs[0]?.arm || 'value'} ${sparkline(rs.map((r) => r.arm_value))}\n`;
    for (const r of rs) {
      const ci =
        r.ci_low !== null && r.ci_high !== null ? ` (CI ${signedPct(r.ci_low)} to ${signedPct(r.ci_high)})` : '';
      const abs =
        r.arm_value !== null
          ? ` ${r.arm_value.toPrecision(4)} vs ${r.reference_value?.toPrecision(4)} ${r.metric ?? ''}`
          : '';
      const aa = r.aa_pass === null ? '' : ` A/A ${r.aa_pass ? 'pass' : 'FAIL'}`;
      out += `  ${iso(r.scheduled_at)} ${r.experiment_state} ${r.verdict ?? '-'} ${signedPct(r.change)}${ci}${abs}${aa}${r.finding ? ` [${r.finding}]` : ''}${r.confirms ? ` (confirmation run of ${r.confirms})` : ''}${where(r)}${r.error ? ` error: ${r.error}` : ''}\n`;
    }
  }
  return out;
}
