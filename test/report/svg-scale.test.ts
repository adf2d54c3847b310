/**
 * The plots' value axis (orchestrator/report/svg-frame.ts linearScale) over values that are equal
 * but for rounding: before, the tick step fell below a unit in the last place of the values, the
 * tick loop never advanced, and writing a report died growing its array (V8 "invalid size", a
 * null A/B whose reps had the same median up to 2e-16). Now such a range is one value, and an axis
 * has a bounded number of ticks whatever the floating point does.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { linearScale } from '../../orchestrator/report/svg-frame.ts';

describe('linearScale', () => {
  for (const values of [
    [1.02, 1.0200000000000002],
    [1e12, 1e12 + 1e-3],
    [0.3, 0.1 + 0.2],
    [5, 5],
  ]) {
    test(`values ${values.join(', ')}: a few round ticks around them`, () => {
      const s = linearScale(values, 0, 100);
      assert.ok(s.ticks.length >= 2 && s.ticks.length <= 12, `${s.ticks.length} ticks`);
      assert.ok(s.lo < Math.min(...values) && s.hi > Math.max(...values));
      for (const v of values) assert.ok(s.at(v) >= 0 && s.at(v) <= 100);
    });
  }

  test('an ordinary range keeps the ticks it had', () => {
    assert.deepEqual(linearScale([0.8, 1.9], 0, 100).ticks, [1, 1.5]);
    assert.deepEqual(linearScale([0, 10], 0, 100, true).ticks, [0, 5, 10]);
  });
});
