/**
 * A toggle graphrt accepts but cannot apply (pdl on the CPU backend) is never reported as a
 * measurement of it: a whole leave-one-out experiment on the real graphrt CPU backend (embedded
 * Redis, a real `orch submit`) commits the reps' `unsupported`, and report.md, report.json and
 * summary.json say the arms with pdl on did not measure it and give pdl no worth.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Analysis } from '../../orchestrator/stats/types.ts';
import { runOrch } from '../orchestrator/orch-cluster.ts';

test('pdl on the cpu backend: reported unsupported in the arm and leave-one-out tables, never as a worth', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-unsupported-'));
  try {
    const results = join(dir, 'results');
    const r = await runOrch(
      ['submit', 'test/fixtures/specs/cpu-pdl-loo.yaml', '--results', results],
      { REDIS_URL: '', ORCH_PREFIX: '', ORCH_LOG: 'warn', ORCH_CPU_CARDS: '1' },
      240_000,
    );
    const [id] = readdirSync(results);
    const out = join(results, id!);
    const md = readFileSync(join(out, 'report.md'), 'utf8');
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as Analysis;
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
      state: string;
      analysis: Analysis;
    };
    assert.equal(summary.state, 'done', `${r.stderr}\n${md}`);

    const note = 'pdl: unsupported on cpu — not measured';
    for (const a of [report, summary.analysis]) {
      const byArm = new Map(a.arms.map((s) => [s.arm, s.unsupported.map((u) => u.note)]));
      // the arms that turn pdl on are all_on and no_graph; base and no_pdl do not
      assert.deepEqual(byArm.get('all_on'), [note]);
      assert.deepEqual(byArm.get('no_graph'), [note]);
      assert.deepEqual(byArm.get('base'), []);
      assert.deepEqual(byArm.get('no_pdl'), []);
      const pdl = a.loo!.rows.find((row) => row.toggle === 'pdl')!;
      assert.equal(pdl.unsupported, note);
      assert.deepEqual(
        [pdl.worth, pdl.worth_se, pdl.worth_rel, pdl.t, pdl.p, pdl.share],
        [null, null, null, null, null, null],
      );
      assert.equal(a.loo!.rows.find((row) => row.toggle === 'graph')!.unsupported, null);
    }
    assert.match(md, new RegExp(`^\\| all_on \\|.*\\| ${note} \\|$`, 'm'), md);
    assert.match(md, new RegExp(`^\\| pdl \\| ${note} \\| — \\|`, 'm'), md);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
