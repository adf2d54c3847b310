/**
 * Reading a metric from a command's output (jobs/metric-source.ts): the trainer's timer line of
 * the field notes, JSON lines, warm-up and step 0 excluded by index, and the errors that name
 * the spec path.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { UserInputError } from '../../jobs/errors.ts';
import {
  checkMetricSource,
  MetricParser,
  type MetricSample,
  type MetricSourceInput,
  selectMeasured,
} from '../../jobs/metric-source.ts';

const TIMER: MetricSourceInput = {
  format: 'regex',
  pattern: 'timer step (?<step>\\d+): total=(?<value>[0-9.]+)ms',
  value_group: 'value',
  step_group: 'step',
};

function parseAll(src: MetricSourceInput, lines: string[]): MetricSample[] {
  const p = new MetricParser(src);
  return lines.map((l) => p.parseLine(l)).filter((s): s is MetricSample => s !== null);
}

describe('metric source', () => {
  test('the timer line of the field notes gives step 6300 and 497 ms', () => {
    const [s] = parseAll(TIMER, ['timer step 6300: total=497ms data=0.1ms fwd=199ms bwd=215ms']);
    assert.deepEqual(s, { step: 6300, value: 497, line: 1 });
  });

  test('a named group other than total reads that stage', () => {
    const src: MetricSourceInput = {
      format: 'regex',
      pattern: 'timer step (?<s>\\d+):.* fwd=(?<fwd>[0-9.]+)ms',
      value_group: 'fwd',
      step_group: 's',
    };
    assert.deepEqual(parseAll(src, ['noise', 'timer step 7: total=497ms data=0.1ms fwd=199ms bwd=215ms']), [
      { step: 7, value: 199, line: 2 },
    ]);
  });

  test('step 0 is never a step and warm-up steps are excluded by index, not by order', () => {
    // Step 0 carries the one-time cost (17 s against 0.5 s in the field notes).
    const lines = [
      'timer step 0: total=17086ms',
      'timer step 1: total=510ms',
      'timer step 2: total=500ms',
      'timer step 3: total=497ms',
      'timer step 4: total=499ms',
    ];
    const samples = parseAll(TIMER, lines);
    assert.deepEqual(
      selectMeasured(samples, { warmup: 0, steps: 4, describe: 't', tail: '' }).values,
      [510, 500, 497, 499],
    );
    assert.deepEqual(selectMeasured(samples, { warmup: 2, steps: 3, describe: 't', tail: '' }), {
      values: [500, 497, 499],
      steps: [2, 3, 4],
      excluded: 2,
    });
    // A run that resumes at step 6300 has no warm-up by index below it: all its steps count.
    const resumed = parseAll(TIMER, ['timer step 6300: total=497ms', 'timer step 6301: total=498ms']);
    assert.deepEqual(selectMeasured(resumed, { warmup: 8, steps: 2, describe: 't', tail: '' }).steps, [6300, 6301]);
  });

  test('without a step group the step index is the order of metric lines', () => {
    const src: MetricSourceInput = { format: 'regex', pattern: 'total=(?<value>[0-9.]+)ms', value_group: 'value' };
    const samples = parseAll(src, ['start', 'total=900ms', 'x', 'total=10ms', 'total=11ms']);
    assert.deepEqual(
      samples.map((s) => s.step),
      [0, 1, 2],
    );
    assert.deepEqual(selectMeasured(samples, { warmup: 1, steps: 2, describe: 't', tail: '' }).values, [10, 11]);
  });

  test('JSON lines: dotted fields, other lines ignored', () => {
    const src: MetricSourceInput = { format: 'jsonl', field: 'timers.total_ms', step_field: 'step' };
    const samples = parseAll(src, [
      'loading',
      '{"step":0,"timers":{"total_ms":900}}',
      '{"event":"eval"}',
      '{"step":1,"timers":{"total_ms":12.5}}',
    ]);
    assert.deepEqual(samples, [
      { step: 0, value: 900, line: 2 },
      { step: 1, value: 12.5, line: 4 },
    ]);
  });

  test('a regex without the named group the metric needs is an issue at workload.metric_source.pattern', () => {
    const src: MetricSourceInput = {
      format: 'regex',
      pattern: 'timer step (?<step>\\d+): total=([0-9.]+)ms',
      value_group: 'value',
      step_group: 'step',
    };
    assert.deepEqual(checkMetricSource(src), [
      {
        field: 'pattern',
        message: 'the regex lacks the named group "value" that value_group names (its named groups are "step")',
        fix: 'write (?<value>…) around the number, e.g. total=(?<value>[0-9.]+)ms, or set value_group to one of step',
      },
    ]);
    assert.throws(
      () => new MetricParser(src),
      (e: unknown) =>
        e instanceof UserInputError &&
        e.code === 'METRIC_SOURCE_INVALID' &&
        e.message.startsWith('workload.metric_source.pattern: the regex lacks the named group "value"'),
    );
    assert.deepEqual(
      checkMetricSource({ format: 'regex', pattern: 'total=(', value_group: 'value' }).map((i) => i.field),
      ['pattern'],
    );
    assert.deepEqual(checkMetricSource(TIMER), []);
  });

  test('a run that printed no metric line is an error naming the spec path and quoting the output', () => {
    assert.throws(
      () => selectMeasured([], { warmup: 2, steps: 4, describe: 'arm "fast"', tail: '  | step 1 loss=3.2' }),
      (e: unknown) =>
        e instanceof UserInputError &&
        e.code === 'METRIC_NO_LINES' &&
        e.message ===
          'workload.metric_source: the run printed no metric line (arm "fast"); last output:\n  | step 1 loss=3.2',
    );
  });

  test('too few measured steps, and a value that is not a number, are errors', () => {
    const samples = parseAll(TIMER, ['timer step 0: total=1ms', 'timer step 1: total=1ms']);
    assert.throws(
      () => selectMeasured(samples, { warmup: 1, steps: 4, describe: 't', tail: '' }),
      /printed 2 metric line\(s\) \(steps 0\.\.1\), 1 with step >= 1, but workload\.steps is 4/,
    );
    const loose: MetricSourceInput = { format: 'regex', pattern: 'total=(?<value>\\S+)', value_group: 'value' };
    assert.throws(
      () => parseAll(loose, ['total=497ms']),
      /workload\.metric_source\.value_group "value" read "497ms" on output line 1, not a number/,
    );
  });
});
