/**
 * A night's comparisons are corrected together (Benjamini–Hochberg, orchestrator/nightly/
 * night-findings.ts) and a suspected regression confirmed by a paired run
 * (confirm-regressions.ts) before it is alerted. Seeded nights of 200 comparisons: every null
 * comparison whose own test says slower at 0.05 (about 5 a night, as a suite of 200 gets without
 * correction) is recorded `slower-uncorrected`, not alerted; the nulls the correction lets through
 * at its default rate (about 0.15 a night) are not confirmed; 5 planted regressions with strong
 * evidence among them are alerted, confirmed, every night.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { NightlyRow } from '../../history/history-store.ts';
import { mulberry32 } from '../../jobs/seeded-random.ts';
import { confirmRegressions } from '../../orchestrator/nightly/confirm-regressions.ts';
import { findings } from '../../orchestrator/nightly/night-findings.ts';
import { benjaminiHochberg } from '../../orchestrator/stats/false-discovery.ts';
import { row } from '../history/nightly-row.ts';

describe('the night corrected together', () => {
  test('Benjamini–Hochberg: the step-up rule, and nulls without a p left out', () => {
    assert.deepEqual(benjaminiHochberg([0.01, 0.03, 0.02, 0.5], 0.05), [true, true, true, false]);
    assert.deepEqual(benjaminiHochberg([0.01, 0.04, 0.03, 0.5], 0.05), [true, false, false, false], '0.03 > 2·0.05/4');
    assert.deepEqual(benjaminiHochberg([0.01, 0.02, 0.9], 0.05), [true, true, false]);
    assert.deepEqual(benjaminiHochberg([0.04, 0.045, null], 0.05), [true, true, false]);
    assert.deepEqual(benjaminiHochberg([0.03, 0.5, 0.6, 0.7], 0.05), [false, false, false, false], '0.03 > 1·0.05/4');
  });

  test('200 comparisons a night: null "slower"s are not alerted, planted regressions are, confirmed', async () => {
    let falseAlerts = 0;
    let uncorrectedThrough = 0;
    let found = 0;
    let uncorrectedSlower = 0;
    const nights = 50;
    for (let n = 0; n < nights; n++) {
      const rand = mulberry32(100 + n);
      // a null's two-sided p is uniform, and its test calls it slower half the time it rejects
      const comparison = (planted: boolean, over: Partial<NightlyRow>): NightlyRow => {
        const p = planted ? 1e-6 * (1 + rand()) : rand();
        const slower = planted || (p < 0.05 && rand() < 0.5);
        return row({ verdict: slower ? 'slower' : 'inconclusive', p_value: p, change: slower ? 0.03 : 0.001, ...over });
      };
      const rows = Array.from({ length: 200 }, (_, i) =>
        comparison(i < 5, { run_id: `night-${n}`, spec_file: `/s/spec-${i}.yaml`, experiment: `e${i}` }),
      );
      uncorrectedSlower += rows.filter((r, i) => i >= 5 && r.verdict === 'slower').length;
      const corrected = findings(rows, []);
      uncorrectedThrough += corrected.alerts.filter((a) => !/spec-[0-4]\.yaml/.test(a.spec_file)).length;
      // the confirmation run of a spec: the same truth measured again
      const f = await confirmRegressions(corrected, async (s) => [
        comparison(/spec-[0-4]\.yaml/.test(s.spec_file), {
          run_id: s.run_id,
          spec_file: s.spec_file,
          experiment: `${s.experiment}-again`,
        }),
      ]);
      falseAlerts += f.alerts.filter((a) => !/spec-[0-4]\.yaml/.test(a.spec_file)).length;
      found += f.alerts.filter(
        (a) => /spec-[0-4]\.yaml/.test(a.spec_file) && a.message.includes('; confirmed by a paired confirmation run'),
      ).length;
      assert.ok(
        f.rows.filter((r) => r.finding === 'slower-uncorrected').every((r) => !/spec-[0-4]\.yaml/.test(r.spec_file)),
      );
    }
    assert.ok(
      uncorrectedSlower / nights > 3,
      `without correction about 5 null "slower"s a night: ${uncorrectedSlower / nights}`,
    );
    assert.ok(
      uncorrectedThrough > falseAlerts,
      `the confirmation stopped none of the ${uncorrectedThrough} nulls the correction let through`,
    );
    assert.ok(falseAlerts / nights <= 0.05, `false alerts per night ${falseAlerts / nights}`);
    assert.equal(found, 5 * nights, 'every planted regression alerted, confirmed, every night');
  });
});
