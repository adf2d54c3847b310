/**
 * Running a suite's nights in a test: install it on a 1 s schedule through the real CLI, wait
 * until `count` more runs have ended in the history, remove the schedule and wait until the
 * nightly queue has drained and no run is left running (more nights than asked may have run).
 */
import assert from 'node:assert/strict';
import type { Queue } from 'bullmq';
import type { HistoryStore } from '../../history/history-store.ts';
import { type Cluster, runOrch } from '../orchestrator/orch-cluster.ts';
import { waitFor } from '../utils/wait-for.ts';

export function suiteNights(o: {
  cluster: Cluster;
  history: HistoryStore;
  queue: Queue;
  suite: string;
  file: string;
  timeoutMs?: number;
}): (count: number) => Promise<void> {
  const timeoutMs = o.timeoutMs ?? 120_000;
  const ended = async () => (await o.history.runs(o.suite, 100)).filter((r) => r.state !== 'running');
  return async (count) => {
    const before = (await ended()).length;
    const inst = await runOrch(['nightly', 'install', o.file, '--every', '1000'], o.cluster.env, 30_000);
    assert.equal(inst.code, 0, inst.stderr);
    await waitFor(`${count} more recorded nights`, async () => (await ended()).length >= before + count, {
      timeoutMs,
      intervalMs: 250,
    });
    assert.equal((await runOrch(['nightly', 'remove', o.suite], o.cluster.env, 30_000)).code, 0);
    const pending = async () =>
      Object.values(await o.queue.getJobCounts('active', 'waiting', 'delayed', 'prioritized')).reduce(
        (a, b) => a + b,
        0,
      );
    await waitFor('the nightly queue drained', async () => (await pending()) === 0, { timeoutMs, intervalMs: 250 });
    await waitFor(
      'every run ended',
      async () => (await o.history.runs(o.suite, 100)).every((r) => r.state !== 'running'),
      { timeoutMs, intervalMs: 250 },
    );
  };
}
