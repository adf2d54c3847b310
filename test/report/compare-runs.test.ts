/**
 * `orch compare` over three runs of one workload (real redis-server, `orch serve`, `orch worker`
 * with fixture ranks, three `orch submit`s): the third ran on a worker whose steps take 1.5× as
 * long, planted. Each run is compared with the first; the planted +50 % is found in both arms of
 * the third run and survives Benjamini–Hochberg over all four arm comparisons. Fewer than two
 * runs is a usage error.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type Cluster, runOrch, startCluster } from '../orchestrator/orch-cluster.ts';

const REP_MS = 200;
const PLANTED = 1.5;

let cluster: Cluster | null = null;
const results = mkdtempSync(join(tmpdir(), 'orch-compare-runs-'));
after(async () => {
  await cluster?.stop();
  rmSync(results, { recursive: true, force: true });
});

async function submit(c: Cluster): Promise<string> {
  const r = await runOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', results], c.env, 120_000);
  const dir = /^results: (.+)$/m.exec(r.stdout)?.[1];
  assert.ok(dir, `${r.code}\n${r.stdout}\n${r.stderr}`);
  return dir;
}

test('compare three runs: each against the first, the planted change found and kept by BH', async () => {
  cluster = await startCluster();
  const c = cluster;
  c.startServe();
  const first = await c.startWorker({ cpuCards: 1, repMs: REP_MS });
  const dirs = [await submit(c), await submit(c)];
  first.child.kill('SIGTERM');
  await first.exited;
  await c.startWorker({ cpuCards: 1, repMs: REP_MS * PLANTED });
  dirs.push(await submit(c));

  const r = await runOrch(['compare', ...dirs, '--json'], c.env);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.baseline, dirs[0]);
  assert.deepEqual(
    out.comparisons.map((x: { b: string }) => x.b),
    dirs.slice(1),
  );
  const third = out.comparisons[1];
  for (const [i, arm] of third.arms.entries()) {
    const [lo, hi] = arm.relative.ci;
    assert.ok(
      lo < PLANTED - 1 + 0.02 && hi > PLANTED - 1 - 0.02,
      `${arm.arm}: ${arm.relative.estimate} (CI ${lo} to ${hi}) against the planted ${PLANTED - 1}`,
    );
    assert.equal(out.discoveries[1][i], true, `${arm.arm} of the third run survives BH`);
  }
  const text = await runOrch(['compare', ...dirs], c.env);
  console.log(text.stdout);
  assert.match(text.stdout, /^# compare 3 runs with /);
  assert.match(
    text.stdout,
    new RegExp(
      `^\\| ${dirs[2]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\| \\+\\d+\\.\\d\\d % .* \\*\\*changed\\*\\* \\|`,
      'm',
    ),
  );

  const one = await runOrch(['compare', dirs[0]!], c.env);
  assert.equal(one.code, 2, one.stderr);
  assert.match(one.stderr, /orch compare needs at least two runs, got 1/);
});
