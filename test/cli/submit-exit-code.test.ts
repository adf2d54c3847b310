// `orch submit` (waiting, embedded) exits with the outcome's code under --fail-on, and `orch
// report --from` on the results it wrote gives the same code: planted step times from the fixture
// rank (FIXTURE_ARM_MS) make the graph arm faster, slower, no different (inconclusive), or the
// A/A twin differ from its control (a failed gate: invalid); a sequential experiment of two arms
// of one speed with a wide min_effect decides equivalent (test/utils/sequential-spec.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { EXIT_CODES, FAIL_ON_CHOICES } from '../../orchestrator/report/outcome-exit-code.ts';
import { FIXTURE_RANK } from '../orchestrator/orch-cluster.ts';
import { sequentialSpec } from '../utils/sequential-spec.ts';
import { runOrch } from './run-orch.ts';

const embedded = { REDIS_URL: '', ORCH_PREFIX: '', ORCH_LOG: 'warn', ORCH_GRAPHRT: FIXTURE_RANK, ORCH_CPU_CARDS: '2' };

const cases = [
  // [verdict, planted step times, exit code with the default --fail-on, a --fail-on that flips it, exit code with that]
  { verdict: 'faster', arms: 'eager:10,eager_aa:10,graph:5', code: 0, other: 'inconclusive', otherCode: 0 },
  { verdict: 'slower', arms: 'eager:5,eager_aa:5,graph:10', code: EXIT_CODES.slower, other: 'invalid', otherCode: 0 },
  { verdict: 'invalid', arms: 'eager:10,eager_aa:14,graph:5', code: EXIT_CODES.invalid, other: 'slower', otherCode: 0 },
  // no change: passes by default (it exited 3, failing a CI step for a change that changes nothing)
  {
    verdict: 'inconclusive',
    arms: 'eager:10,eager_aa:10,graph:10',
    code: 0,
    other: 'inconclusive,slower',
    otherCode: EXIT_CODES.inconclusive,
  },
] as const;

/** `orch submit` of `spec` with `args`; its results directory and `--json` line. */
function submit(
  spec: string,
  args: string[],
  env: Record<string, string>,
): { status: number | null; dir: string; out: { state: string; verdict: string }; stderr: string } {
  const root = mkdtempSync(join(tmpdir(), 'orch-outcome-'));
  const r = runOrch(['submit', spec, '--results', root, '--json', ...args], { ...embedded, ...env });
  const [id] = readdirSync(root);
  assert.ok(id, `no results written: ${r.stderr}`);
  return {
    status: r.status,
    dir: join(root, id),
    out: JSON.parse(r.stdout) as { state: string; verdict: string },
    stderr: r.stderr,
  };
}

describe('orch submit and orch report: one exit code per outcome, under --fail-on', () => {
  for (const c of cases) {
    it(`${c.verdict}: exit ${c.code} by default, ${c.otherCode} with --fail-on ${c.other}`, () => {
      const s = submit('test/fixtures/specs/verdict-ab.yaml', [], { FIXTURE_ARM_MS: c.arms });
      try {
        assert.equal(s.out.state, 'done', s.stderr);
        assert.equal(s.out.verdict, c.verdict, s.stderr);
        assert.equal(s.status, c.code, s.stderr);
        assert.equal(
          runOrch(['report', '--from', s.dir]).status,
          c.code,
          'orch report gives the code orch submit gave',
        );
        const flipped = runOrch(['report', '--from', s.dir, '--fail-on', c.other, '--json']);
        assert.equal(flipped.status, c.otherCode, flipped.stderr);
      } finally {
        rmSync(join(s.dir, '..'), { recursive: true, force: true });
      }
    });
  }

  it('equivalent: exit 0 by default, 6 with --fail-on equivalent', () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-equivalent-'));
    const spec = join(dir, 'seq.yaml');
    writeFileSync(spec, sequentialSpec('{ GRAPH: false, STALE: true }', 0.2));
    const s = submit(spec, ['--fail-on', 'equivalent'], { ORCH_CPU_CARDS: '1' });
    try {
      assert.equal(s.out.verdict, 'equivalent', s.stderr);
      assert.equal(s.status, EXIT_CODES.equivalent, s.stderr);
      assert.equal(runOrch(['report', '--from', s.dir]).status, 0, 'equivalent passes under the default --fail-on');
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(join(s.dir, '..'), { recursive: true, force: true });
    }
  });

  it('a --fail-on outside the choices is refused with them, before anything runs', () => {
    const r = runOrch(['submit', 'test/fixtures/specs/verdict-ab.yaml', '--fail-on', 'slower,regressed'], embedded);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /--fail-on: unknown outcome "regressed"/);
    assert.ok(r.stderr.includes(`choose from ${FAIL_ON_CHOICES.join(', ')} (or none)`), r.stderr);
  });
});
