/**
 * What tonight's rows mean against the nights before: at most one finding, and one alert, per
 * row. In order of precedence:
 *   failed          the spec did not run, or its experiment ended failed or cancelled
 *   invalid         a gate failed (the A/A control, identity, input): no verdict can be believed
 *   regression      the paired verdict is `slower` and the night before was not (an ongoing
 *                   regression is not alerted every night); the ratio's CI is from inside one
 *                   experiment, where the machine's drift cancels; and its p survives the
 *                   night's Benjamini–Hochberg correction at the suite's false discovery rate
 *                   (else `slower-uncorrected`: recorded, not alerted); the alert waits for a
 *                   paired confirmation run (confirm-regressions.ts)
 *   machine-change  the arm's and the reference's absolute numbers both shifted the same way
 *                   (detect-shift.ts over the nights) while the verdict and the A/A stayed put
 *   node-change     tonight ran on other Slurm nodes than the night before, the spec does not
 *                   allow comparing across them (node-change.ts), and too few nights ran on
 *                   tonight's nodes to judge its absolute numbers against (detect-shift.ts's
 *                   baseline): alerted once, on the night of the change, so a series that cannot
 *                   be watched is not silent; the nights after say so in their row only
 *   absolute-shift  one absolute number shifted alone: recorded, not alerted (the ratio has
 *                   its own verdict)
 * Every row also records its node change, if any, whatever its finding (`node_change`).
 */
import type { NightlyRow } from '../../history/history-store.ts';
import { benjaminiHochberg } from '../stats/false-discovery.ts';
import { SHIFT_DEFAULTS, type ShiftAt, shiftTonight } from './detect-shift.ts';
import { makeAlert, type NightlyAlert, signedPct } from './nightly-alert.ts';
import { type NodeChange, nodeChange } from './node-change.ts';

export interface NightFindings {
  rows: NightlyRow[];
  alerts: NightlyAlert[];
}

const seriesKey = (r: NightlyRow) => `${r.spec_file}\u0000${r.arm}\u0000${r.reference}`;

/**
 * The suite's false discovery rate when it names none. Benjamini–Hochberg at q lets about q of the
 * night's discoveries be nulls (0.15 a night at 0.05 with 5 real regressions among 200
 * comparisons); each then still needs its paired confirmation run (confirm-regressions.ts) to say
 * slower again, which a null does about once in 40. So q can be 0.05 rather than 0.01, and the
 * regressions whose evidence is not overwhelming are found: bench/nightly-suite.ts (200 a night,
 * 5 planted 3 % regressions, rep sd 1 %, 50 nights) alerts 0.020 nulls a night at 0.05 and finds
 * 98.4 % of the regressions (all five in 92 % of nights), against 0 and 89.6 % (58 %) at 0.01.
 */
export const DEFAULT_FDR = 0.05;

/**
 * `allowsNodeChange`: whether the spec of a file lets its nights be compared across Slurm node
 * changes (across_runs.allow_node_change); default: none does.
 */
export function findings(
  tonight: NightlyRow[],
  before: NightlyRow[],
  fdr = DEFAULT_FDR,
  allowsNodeChange: (specFile: string) => boolean = () => false,
): NightFindings {
  const past = new Map<string, NightlyRow[]>();
  for (const r of before) {
    // a confirmation run checked one night's row; the series is the nights themselves
    if (r.run_id === tonight[0]?.run_id || r.confirms !== null) continue;
    past.set(seriesKey(r), [...(past.get(seriesKey(r)) ?? []), r]);
  }
  const alerts: NightlyAlert[] = [];
  // the night's comparisons are corrected together: only the rows that carry a verdict's p
  const ps = tonight.map((r) => (r.experiment_state === 'done' && r.gates_pass !== false ? r.p_value : null));
  const discovered = benjaminiHochberg(ps, fdr);
  const tested = ps.filter((p) => p !== null).length;
  const rows = tonight.map((row, i) => {
    const prior = (past.get(seriesKey(row)) ?? []).sort((a, b) => a.scheduled_at - b.scheduled_at);
    const clean = prior.filter((r) => r.experiment_state === 'done' && r.gates_pass !== false);
    const nodes = nodeChange(row, clean, allowsNodeChange(row.spec_file));
    const f = judge(row, prior, nodes, { discovered: discovered[i] === true || row.p_value === null, tested, fdr });
    if (f.alert) alerts.push(alertFor(row, f.kind as NightlyAlert['kind'], f.message));
    return { ...row, finding: f.kind, node_change: nodes.note };
  });
  return { rows, alerts };
}

interface Finding {
  kind: string | null;
  message: string;
  alert: boolean;
}

interface Correction {
  /** this row's p survives the night's correction (a row without p: nothing to correct) */
  discovered: boolean;
  tested: number;
  fdr: number;
}

/** `prior`: the series' earlier nights, oldest first; `nodes`: which of them its absolute numbers may be judged against. */
function judge(row: NightlyRow, prior: NightlyRow[], nodes: NodeChange, correction: Correction): Finding {
  if (row.experiment_state !== 'done')
    return { kind: 'failed', message: row.error ?? `experiment ended ${row.experiment_state}`, alert: true };
  if (row.gates_pass === false || row.verdict === 'invalid') {
    return {
      kind: 'invalid',
      message: `the night's verdicts cannot be believed: ${row.error ?? row.gates ?? 'a gate failed'}`,
      alert: true,
    };
  }
  const last = prior.at(-1);
  // a slower night its confirmation run did not repeat was a fluke, not a regression going on
  const lastSlower = last?.verdict === 'slower' && last.finding !== 'regression-unconfirmed';
  if (row.verdict === 'slower' && !lastSlower && !correction.discovered) {
    return {
      kind: 'slower-uncorrected',
      message: `${row.arm} is slower than ${row.reference} by ${signedPct(row.change)}, but not after correcting the night's ${correction.tested} comparisons together (Benjamini–Hochberg at ${correction.fdr}: p = ${row.p_value}); recorded, not alerted`,
      alert: false,
    };
  }
  if (row.verdict === 'slower' && !lastSlower) {
    return {
      kind: 'regression',
      message: `${row.arm} is slower than ${row.reference} by ${signedPct(row.change)}; the night before it was ${last?.finding === 'regression-unconfirmed' ? 'slower but not confirmed' : (last?.verdict ?? 'not measured')}`,
      alert: true,
    };
  }
  const clean = nodes.comparable;
  const shift = (pick: (r: NightlyRow) => number | null): ShiftAt | null => {
    const xs = [...clean, row].map(pick);
    return xs.every((x): x is number => x !== null) ? shiftTonight(xs) : null;
  };
  const arm = shift((r) => r.arm_value);
  const ref = shift((r) => r.reference_value);
  if (
    arm &&
    ref &&
    arm.direction === ref.direction &&
    row.aa_pass !== false &&
    row.verdict === (last?.verdict ?? row.verdict)
  ) {
    const from = clean[arm.from - 1] ?? last;
    const codeMoved = from && JSON.stringify(from.commits) !== JSON.stringify(row.commits);
    return {
      kind: 'machine-change',
      message:
        `absolute ${row.metric ?? 'times'} moved ${arm.direction} (${row.arm} ${signedPct(arm.change)}, ${row.reference} ${signedPct(ref.change)} against their baseline nights) ` +
        `while the ratio (${row.verdict}) and the A/A stayed put: the machine changed, not the code` +
        (codeMoved ? ` — though the commits changed too, so a change common to both arms is possible` : ''),
      alert: true,
    };
  }
  // the nodes changed tonight and too few nights ran on the new ones to judge it: said once, as the alert
  if (nodes.refused && nodes.changedTonight && nodes.comparable.length < SHIFT_DEFAULTS.minBaseline)
    return { kind: 'node-change', message: nodes.note!, alert: true };
  if (arm || ref) {
    const which = arm ? row.arm : row.reference;
    const s = (arm ?? ref)!;
    return { kind: 'absolute-shift', message: `${which} moved ${signedPct(s.change)} alone`, alert: false };
  }
  return { kind: null, message: '', alert: false };
}

export function alertFor(row: NightlyRow, kind: NightlyAlert['kind'], message: string): NightlyAlert {
  return makeAlert({
    kind,
    suite: row.suite,
    spec: row.spec_name ?? row.spec_file,
    spec_file: row.spec_file,
    scheduled_at: new Date(row.scheduled_at).toISOString(),
    experiment: row.experiment,
    comparison: row.arm ? `${row.arm} vs ${row.reference}` : null,
    change: row.change,
    ci: row.ci_low !== null && row.ci_high !== null ? [row.ci_low, row.ci_high] : null,
    commits: row.commits,
    results_dir: row.results_dir,
    message,
  });
}
