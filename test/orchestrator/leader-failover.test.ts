// kill -9 of the scheduler leader mid-experiment with a second `orch serve` standing by: the
// standby takes over, re-attaches to the blocks in flight by their host jobs' deterministic ids,
// and the experiment completes with no block run twice (one attempt, one host job, one rank
// process per block; every planned rep measured once).

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Queue } from 'bullmq';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { hostQueue } from '../../store/keys.ts';
import { waitFor } from '../utils/wait-for.ts';
import { type Cluster, rankIntervals, runOrch, startCluster } from './orch-cluster.ts';

let cluster: Cluster | null = null;
after(async () => cluster?.stop());

test('kill -9 of the leader: the standby takes over and no block runs twice', async () => {
  cluster = await startCluster();
  const c = cluster;
  const first = c.startServe();
  await waitFor('first serve leads', () => first.out().includes('"event":"leader"'), {
    timeoutMs: 30_000,
    intervalMs: 50,
  });
  const second = c.startServe();
  await waitFor('second serve stands by', () => second.out().includes('"event":"standby"'), {
    timeoutMs: 30_000,
    intervalMs: 50,
  });
  await c.startWorker({ cpuCards: 2, repMs: 400 });

  const sub = await runOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--no-wait'], c.env);
  assert.equal(sub.code, 0, sub.stderr);
  const id = sub.stdout.trim();
  const store = new ExperimentStore(c.redis, c.prefix);
  // mid-experiment: two blocks hold cards, one waits
  await waitFor(
    'two blocks running',
    async () => (await store.blocks(id)).filter((b) => b.phase === 'running').length === 2,
    { timeoutMs: 30_000, intervalMs: 20 },
  );
  first.child.kill('SIGKILL');
  const killedAt = Date.now();
  await first.exited;

  await waitFor('the standby leads', () => second.out().includes('"event":"leader"'), {
    timeoutMs: 20_000,
    intervalMs: 50,
  });
  const tookOverMs = Date.now() - killedAt;
  await waitFor(
    'experiment ended',
    async () => ['done', 'failed', 'cancelled'].includes((await store.state(id)) ?? ''),
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  console.log(
    `standby took over ${tookOverMs} ms after kill -9; experiment ended ${Date.now() - killedAt} ms after it`,
  );
  assert.equal(await store.state(id), 'done');

  const blocks = await store.blocks(id);
  assert.deepEqual(
    blocks.map((b) => [b.block, b.phase, b.attempts.length]),
    [
      [0, 'done', 1],
      [1, 'done', 1],
      [2, 'done', 1],
    ],
    JSON.stringify(blocks),
  );
  const q = new Queue(hostQueue('h1'), { connection: c.redis, prefix: c.prefix });
  const jobs = (await q.getJobs(['completed', 'failed', 'active', 'waiting', 'delayed'])).map((j) => j.id).sort();
  await q.close();
  assert.deepEqual(
    jobs,
    [0, 1, 2].map((b) => `${id}.b${b}-a1-h1`),
    'one host job per block, attempt 1 only',
  );
  assert.equal([...rankIntervals(c.rankLog()).values()].flat().length, 3, 'one rank process per block');
  assert.equal(await c.redis.hlen(`${c.prefix}:experiment:${id}:results`), 12, 'every planned rep measured once');
});
