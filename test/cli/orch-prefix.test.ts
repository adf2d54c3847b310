/**
 * ORCH_PREFIX reaches every command the same way: an `orch worker` started with only the
 * environment (no --prefix) registers its cards under that prefix, and `orch status` with the
 * same environment lists them. Before, the worker wrote under `orch` while status read the
 * prefix, so status showed no cards while the worker said ready.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type Cluster,
  FIXTURE_RANK,
  type OrchChild,
  runOrch,
  spawnOrch,
  startCluster,
} from '../orchestrator/orch-cluster.ts';
import { waitFor } from '../utils/wait-for.ts';

describe('ORCH_PREFIX', () => {
  let c: Cluster;
  let worker: OrchChild | null = null;
  const dir = mkdtempSync(join(tmpdir(), 'orch-prefix-'));

  before(async () => {
    c = await startCluster();
  });
  after(async () => {
    if (worker && worker.child.exitCode === null) {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the worker registers under ORCH_PREFIX without --prefix, and status lists its cards', async () => {
    worker = spawnOrch(
      ['worker', '--host', 'p1', '--cpu-cards', '2', '--graphrt', FIXTURE_RANK, '--lock-dir', join(dir, 'locks')],
      c.env,
    );
    await waitFor(
      'worker p1 registered under the prefix',
      async () => (await c.redis.exists(`${c.prefix}:host:p1:alive`)) === 1,
      { timeoutMs: 60_000 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; worker output:\n${worker?.out()}`);
    });
    assert.equal(await c.redis.exists('orch:host:p1:alive'), 0, 'nothing under the default prefix');
    const status = await runOrch(['status'], c.env);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /cpu:0@p1 +p1 +cpu/);
    assert.match(status.stdout, /cpu:1@p1 +p1 +cpu/);
    const elsewhere = await runOrch(['status'], { ...c.env, ORCH_PREFIX: `${c.prefix}-other` });
    assert.equal(elsewhere.code, 0, elsewhere.stderr);
    assert.doesNotMatch(elsewhere.stdout, /@p1/);
  });
});
