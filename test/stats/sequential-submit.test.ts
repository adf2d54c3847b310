/**
 * `stopping: sequential` end to end through `orch submit` (the embedded default, one cpu card so
 * blocks run one after another) with a resident fixture rank whose graph arm is twice as fast
 * (test/fixtures/ranks/orch-rank.mjs): a large planted effect stops at the first look and the
 * blocks it did not need end stopped, each rep accounted for; a null (two arms of the same speed)
 * with a min_effect below the noise runs to its budget and ends inconclusive.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sequentialBoundaries } from '../../orchestrator/stats/sequential.ts';
import { sequentialSpec } from '../utils/sequential-spec.ts';
import { type Submitted, submitSpec } from '../utils/submit-spec.ts';

function submit(treatment: string, minEffect: number): Submitted {
  return submitSpec('seq', sequentialSpec(treatment, minEffect), { ORCH_CPU_CARDS: '1' });
}

describe('sequential stopping through orch submit', () => {
  test('a large planted effect stops at the first look; the blocks not needed end stopped', () => {
    const r = submit('{ GRAPH: true }', 0.01);
    assert.equal(r.code, 0, r.output);
    // the first of three looks at 2 of 6 blocks spends what the rule says: its boundary from the rule itself
    const z = sequentialBoundaries([2 / 6], 0.05)[0] as number;
    const shown = (digits: number) => z.toFixed(digits).replace('.', '\\.');
    assert.match(
      r.report,
      new RegExp(
        `\\*\\*treated vs eager:\\*\\* faster: treated is faster than eager by 50\\.00 % \\(repeated CI .*; look 1 of 1, 2 of 6 blocks, 4 pairs, boundary z ${shown(2)}\\)`,
      ),
    );
    assert.match(r.report, new RegExp(`\\| 1 \\| 2 of 6 \\| 33 % \\| 4 \\| ${shown(3)} \\|`));
    const phases = (r.summary.blocks as { phase: string }[]).map((b) => b.phase);
    const stopped = phases.filter((p) => p === 'stopped').length;
    // the look came after 2 blocks; one more may have been granted before it decided (it runs to its end)
    assert.ok(stopped >= 3 && phases.filter((p) => p === 'done').length + stopped === 6, phases.join(', '));
    const a = r.summary.accounting as {
      planned: number;
      measured: number;
      stopped: number;
      not_run: number;
      unaccounted: string[];
    };
    assert.deepEqual(
      [a.planned, a.measured + a.stopped, a.not_run, a.unaccounted.length],
      [24, 24, 0, 0],
      'every planned rep measured or stopped',
    );
    assert.match(r.report, /all \d+ planned reps used/);
  });

  test('a null with a min_effect below the noise runs to its budget, inconclusive', () => {
    const r = submit('{ GRAPH: false, STALE: true }', 0.0001);
    // inconclusive passes under the default --fail-on (orchestrator/report/outcome-exit-code.ts)
    assert.equal(r.code, 0, r.output);
    assert.equal(r.summary.analysis.verdict, 'inconclusive', r.output);
    assert.deepEqual(
      (r.summary.blocks as { phase: string }[]).map((b) => b.phase),
      ['done', 'done', 'done', 'done', 'done', 'done'],
    );
    assert.match(r.report, /no look decided: 3 look\(s\) so far|look 3 decided \*\*inconclusive\*\*/);
    assert.match(r.report, /\| 3 \| 6 of 6 \| 100 % \|/);
  });
});
