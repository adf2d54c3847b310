// On a cluster (real redis-server, `orch serve`, a worker of cpu cards): a command that prints 30
// lines on each stream and exits 1 fails its block, and `orch submit` (waiting) and `orch watch`
// both end with its last 20 lines of each on stderr — lines 11..30, not 1..10 — read from the
// failure's record (jobs/rank-output-tail.ts), as the embedded default does
// (test/report/failed-rank-output.test.ts).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type Cluster, runOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { LAST_KEPT, PRINTS_THEN_FAILS_SPEC } from '../utils/prints-then-fails-spec.ts';

let cluster: Cluster | null = null;
const dir = mkdtempSync(join(tmpdir(), 'orch-failed-output-'));
after(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The numbers of `<stream> line N` after "printed last:" in `stderr`, in order. */
function tailOf(stderr: string, stream: 'out' | 'err'): number[] {
  const tail = stderr.split(/printed last:\n/)[1] ?? '';
  return [
    ...tail.matchAll(new RegExp(`^ {2}${stream === 'out' ? 'stdout' : 'stderr'} \\| ${stream} line (\\d+)$`, 'gm')),
  ].map((m) => Number(m[1]));
}

test("submit and watch on a cluster end with the failed rank's last 20 lines of each stream", async () => {
  cluster = await startCluster();
  const c = cluster;
  c.startServe();
  await c.startWorker({ cpuCards: 1, repMs: 50 });
  const file = join(dir, 'spec.yaml');
  writeFileSync(file, PRINTS_THEN_FAILS_SPEC);
  const submit = await runOrch(['submit', file, '--results', join(dir, 'res')], c.env, 120_000);
  console.log(submit.stderr);
  assert.notEqual(submit.code, 0);
  assert.deepEqual(tailOf(submit.stderr, 'out'), LAST_KEPT, submit.stderr.slice(-4000));
  assert.deepEqual(tailOf(submit.stderr, 'err'), LAST_KEPT);
  const [id] = await c.redis.zrange(`${c.prefix}:exps`, '0', '-1');
  assert.ok(id);
  const watch = await runOrch(['watch', id], c.env);
  assert.match(watch.stdout, /ended failed/);
  assert.deepEqual(tailOf(watch.stderr, 'out'), LAST_KEPT, watch.stderr.slice(-4000));
  assert.deepEqual(tailOf(watch.stderr, 'err'), LAST_KEPT);
});
