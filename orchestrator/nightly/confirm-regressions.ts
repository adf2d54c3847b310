/**
 * A suspected regression is run again before anyone is told: a row judged `regression` (slower,
 * new, surviving the night's correction) has its spec submitted once more as it ran — the same
 * registered spec, so the same arms, builds and card class — and only when that paired run finds
 * the same comparison slower too is the alert sent, saying so. A fluke (one bad run of the card,
 * or the one null comparison in a hundred nights the correction lets through) is then asked to
 * happen twice in a row, at the confirmation's own alpha: it becomes `regression-unconfirmed`,
 * recorded, not alerted. The confirmation's rows are kept with the night's, `confirms` naming the
 * experiment they checked, so the history shows both runs.
 *
 * A confirmation that could not run (its experiment failed) confirms nothing, but a regression is
 * not dropped for it: the alert is sent, saying the confirmation failed and why.
 */
import type { NightlyRow } from '../../history/history-store.ts';
import { alertFor, type NightFindings } from './night-findings.ts';
import { signedPct } from './nightly-alert.ts';

/** Runs the suspect row's spec again and returns the confirmation's rows (a failed run: its not-run row). */
export type ConfirmationRun = (suspect: NightlyRow) => Promise<NightlyRow[]>;

const comparisonOf = (r: NightlyRow) => `${r.arm} vs ${r.reference}`;

export async function confirmRegressions(judged: NightFindings, rerun: ConfirmationRun): Promise<NightFindings> {
  const suspects = judged.rows.filter((r) => r.finding === 'regression' && r.confirms === null);
  if (suspects.length === 0) return judged;
  // one confirmation per experiment: it runs every comparison of the spec again
  const again = new Map<string, NightlyRow[]>();
  for (const s of suspects) {
    const key = s.experiment ?? s.spec_file;
    if (!again.has(key))
      again.set(
        key,
        (await rerun(s)).map((c) => ({ ...c, confirms: s.experiment, finding: null })),
      );
  }
  let alerts = [...judged.alerts];
  const rows = judged.rows.map((row) => {
    if (!suspects.includes(row)) return row;
    const confirmation = again.get(row.experiment ?? row.spec_file)!;
    const same = confirmation.find((c) => c.arm === row.arm && c.reference === row.reference) ?? null;
    const first = alerts.find(
      (a) => a.kind === 'regression' && a.experiment === row.experiment && a.comparison === comparisonOf(row),
    );
    alerts = alerts.filter((a) => a !== first);
    const failed = confirmation.find((c) => c.experiment_state !== 'done' || c.gates_pass === false) ?? null;
    if (same?.verdict === 'slower' || failed !== null) {
      const what =
        failed === null
          ? `confirmed by a paired confirmation run on the same card class (experiment ${same!.experiment}: slower by ${signedPct(same!.change)}, CI ${signedPct(same!.ci_low)} to ${signedPct(same!.ci_high)})`
          : `NOT confirmed: the confirmation run (experiment ${failed.experiment ?? 'none'}) could not judge it: ${failed.error ?? failed.experiment_state}`;
      alerts.push(
        alertFor(
          row,
          'regression',
          `${first?.message ?? `${row.arm} is slower than ${row.reference} by ${signedPct(row.change)}`}; ${what}`,
        ),
      );
      return row;
    }
    return { ...row, finding: 'regression-unconfirmed' };
  });
  const checked = [...again.values()].flat().map((c) => {
    const suspect = suspects.find((s) => s.experiment === c.confirms && s.arm === c.arm && s.reference === c.reference);
    return suspect === undefined
      ? c
      : { ...c, finding: c.verdict === 'slower' ? 'confirmation-slower' : 'confirmation-not-slower' };
  });
  return { rows: [...rows, ...checked], alerts };
}
