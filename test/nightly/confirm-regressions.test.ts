/**
 * A suspected regression is confirmed by a paired run before it alerts
 * (orchestrator/nightly/confirm-regressions.ts), on the night's real findings: the
 * confirmation's rows are what the run of the same spec again would record (rows of the
 * history's shape). Slower again: one alert saying it was confirmed; not slower: no alert, the row
 * `regression-unconfirmed`, both kept; a confirmation that failed: the alert, saying it could not
 * confirm; and the next night's real slowdown after a fluke is a new regression.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NightlyRow } from '../../history/history-store.ts';
import { confirmRegressions } from '../../orchestrator/nightly/confirm-regressions.ts';
import { findings } from '../../orchestrator/nightly/night-findings.ts';
import { row } from '../history/nightly-row.ts';

const quiet = row({
  run_id: 'n1',
  scheduled_at: 1,
  experiment: 'e0',
  verdict: 'inconclusive',
  change: 0.001,
  finding: null,
});
const tonight = () => [row({ run_id: 'n2', scheduled_at: 2, experiment: 'e1', finding: null })];
const again = (over: Partial<NightlyRow>) => async (s: NightlyRow) => [
  row({ ...s, experiment: 'e1-confirm', finding: null, ...over }),
];

test('slower again: one regression alert that says it was confirmed; the history keeps both runs', async () => {
  const judged = await confirmRegressions(
    findings(tonight(), [quiet]),
    again({ verdict: 'slower', change: 0.049, ci_low: 0.04, ci_high: 0.058 }),
  );
  assert.equal(judged.alerts.length, 1);
  assert.equal(judged.alerts[0]!.kind, 'regression');
  assert.match(
    judged.alerts[0]!.text,
    /; confirmed by a paired confirmation run on the same card class \(experiment e1-confirm: slower by \+4\.9 %, CI \+4\.0 % to \+5\.8 %\)/,
  );
  assert.deepEqual(
    judged.rows.map((r) => [r.experiment, r.finding, r.confirms]),
    [
      ['e1', 'regression', null],
      ['e1-confirm', 'confirmation-slower', 'e1'],
    ],
  );
});

test('not slower again: a fluke, no alert; the row is regression-unconfirmed beside its confirmation', async () => {
  const judged = await confirmRegressions(
    findings(tonight(), [quiet]),
    again({ verdict: 'inconclusive', change: 0.001, p_value: 0.6 }),
  );
  assert.deepEqual(judged.alerts, []);
  assert.deepEqual(
    judged.rows.map((r) => [r.experiment, r.finding, r.confirms]),
    [
      ['e1', 'regression-unconfirmed', null],
      ['e1-confirm', 'confirmation-not-slower', 'e1'],
    ],
  );
  // the next night slower for real is a new regression (the fluke is not "slower the night before"), and its confirmation row is no night of the series
  const next = [row({ run_id: 'n3', scheduled_at: 3, experiment: 'e2', finding: null })];
  const later = findings(next, [quiet, ...judged.rows]);
  assert.equal(later.rows[0]!.finding, 'regression');
  assert.match(later.alerts[0]!.message, /the night before it was slower but not confirmed/);
});

test('a confirmation that could not run confirms nothing, and the regression is still alerted, saying so', async () => {
  const judged = await confirmRegressions(
    findings(tonight(), [quiet]),
    again({ experiment_state: 'failed', verdict: null, error: 'experiment ended failed' }),
  );
  assert.equal(judged.alerts.length, 1);
  assert.match(
    judged.alerts[0]!.text,
    /NOT confirmed: the confirmation run \(experiment e1-confirm\) could not judge it: experiment ended failed/,
  );
});

test('nothing suspected: no confirmation is run', async () => {
  let runs = 0;
  const judged = await confirmRegressions(
    findings([{ ...tonight()[0]!, verdict: 'inconclusive' }], [quiet]),
    async () => {
      runs++;
      return [];
    },
  );
  assert.equal(runs, 0);
  assert.equal(judged.rows.length, 1);
});
