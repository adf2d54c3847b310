/**
 * The nightly change detector by seeded simulation through its real code (simulate-nights.ts):
 * few false alarms on change-free series (normal and heavy-tailed nights), most large changes
 * caught within days, and the change's size and start read back. Bounds are generous: the
 * table with the numbers is bench/nightly-detector.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mulberry32 } from '../../jobs/seeded-random.ts';
import { detectShifts, SHIFT_DEFAULTS, shiftTonight } from '../../orchestrator/nightly/detect-shift.ts';
import { simulateDetector, simulateSeries } from './simulate-nights.ts';

describe('nightly change detector', () => {
  it('raises few false alarms on change-free nights, normal or heavy-tailed', () => {
    for (const noise of ['normal', 't3'] as const) {
      const r = simulateDetector({ nights: 40, cv: 0.01, noise, shift: 0, at: 20, trials: 300, seed: 7 });
      assert.ok(r.falseAlarmPerNight < 0.01, `${noise}: ${r.falseAlarmPerNight} false alarms per night`);
    }
  });

  it('detects a change of 5 noise sds within 3 nights in most series, 3 sds within 7', () => {
    const big = simulateDetector({ nights: 40, cv: 0.01, noise: 'normal', shift: 5, at: 20, trials: 300, seed: 8 });
    assert.ok(big.within[3] > 0.8, `5 sd within 3 nights: ${big.within[3]}`);
    const mid = simulateDetector({ nights: 40, cv: 0.01, noise: 'normal', shift: 3, at: 20, trials: 300, seed: 9 });
    assert.ok(mid.within[7] > 0.6, `3 sd within 7 nights: ${mid.within[7]}`);
  });

  it('names the direction, the size against the baseline and where the new regime starts', () => {
    const sim = { nights: 30, cv: 0.005, noise: 'normal', shift: 10, at: 20 } as const;
    const series = simulateSeries(sim, mulberry32(3));
    const alarms = detectShifts(series);
    assert.equal(alarms.length, 1, JSON.stringify(alarms));
    const [a] = alarms;
    assert.equal(a!.direction, 'up');
    assert.ok(
      a!.from >= sim.at - 2 && a!.from <= sim.at && a!.night >= sim.at && a!.night <= sim.at + 2,
      JSON.stringify(a),
    );
    // the simulated level moved by shift × cv
    assert.ok(Math.abs(a!.change - sim.shift * sim.cv) < 0.02, `change ${a!.change}`);
    assert.equal(shiftTonight(series.slice(0, a!.night + 1))?.night, a!.night);
    assert.equal(shiftTonight(series.slice(0, SHIFT_DEFAULTS.minBaseline)), null);
  });
});
