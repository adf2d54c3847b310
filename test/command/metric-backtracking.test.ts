/**
 * A metric regex that backtracks catastrophically (a repeated group that itself repeats) is
 * refused at validate: on the worker it would run on the event loop that renews the lease, and
 * `(\d+)+x` spends seconds on one line of 28 digits. Usual patterns stay accepted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkMetricSource } from '../../jobs/metric-source.ts';

test('nested quantifiers in a metric regex are refused with a rewrite; usual patterns pass', () => {
  for (const pattern of [
    '(?<value>(\\d+)+)x',
    'total=(?<value>(\\d+\\.?)+)ms',
    '(?<value>(?:[0-9]+,?){2,})',
    '(?<value>(.*)*)$',
  ]) {
    const issues = checkMetricSource({ format: 'regex', pattern, value_group: 'value' });
    assert.equal(issues.length, 1, `${pattern} accepted`);
    assert.match(issues[0]!.message, /can backtrack for seconds on one line: the group .* repeats a repetition/);
  }
  for (const pattern of [
    'timer step (?<step>\\d+): total=(?<value>[0-9.]+)ms',
    '(?<value>[0-9]+(?:\\.[0-9]+)?)',
    '(?<value>\\d+)(ms)?',
    '(?<value>(ab)+)',
  ]) {
    assert.deepEqual(
      checkMetricSource({
        format: 'regex',
        pattern,
        value_group: 'value',
        ...(pattern.includes('step') ? { step_group: 'step' } : {}),
      }),
      [],
      pattern,
    );
  }
});
