// A worker killed with -9 mid-block (real processes): its host stops heartbeating, the scheduler
// declares the attempt lost and re-dispatches the block as attempt 2 on another host's card; the
// experiment completes with every rep measured once, and the results keep the lost attempt's
// events, marked not committed, beside the committed attempt's.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { waitFor } from '../utils/wait-for.ts';
import { type Cluster, runOrch, startCluster } from './orch-cluster.ts';

let cluster: Cluster | null = null;
after(async () => cluster?.stop());

test('kill -9 of a worker mid-block: attempt 2 on another host, the lost attempt never counted', async () => {
  cluster = await startCluster();
  const c = cluster;
  c.startServe();
  const w1 = await c.startWorker({ host: 'h1', cpuCards: 1, repMs: 600 });
  const sub = await runOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--no-wait'], c.env);
  assert.equal(sub.code, 0, sub.stderr);
  const id = sub.stdout.trim();
  const store = new ExperimentStore(c.redis, c.prefix);
  await waitFor(
    'block 0 measuring',
    async () =>
      (await store.block(id, 0))?.phase === 'running' &&
      (await c.redis.xlen(`${c.prefix}:experiment:${id}:events`)) >= 3,
    { timeoutMs: 40_000, intervalMs: 20 },
  );
  w1.child.kill('SIGKILL');
  await w1.exited;
  await c.startWorker({ host: 'h2', cpuCards: 1, repMs: 50 });

  await waitFor(
    'experiment ended',
    async () => ['done', 'failed', 'cancelled'].includes((await store.state(id)) ?? ''),
    { timeoutMs: 90_000, intervalMs: 100 },
  );
  assert.equal(await store.state(id), 'done');
  const b0 = (await store.block(id, 0))!;
  console.log(
    `block 0 attempts: ${JSON.stringify(b0.attempts.map((a) => [a.attempt, a.gang.map((g) => g.host).join(), a.outcome, a.reason]))}`,
  );
  assert.deepEqual(
    b0.attempts.map((a) => [a.attempt, a.gang[0]!.host, a.outcome]),
    [
      [1, 'h1', 'lost'],
      [2, 'h2', 'committed'],
    ],
  );
  assert.equal(await c.redis.hlen(`${c.prefix}:experiment:${id}:results`), 12);

  const res = join(`${c.fixtureLog}.results`);
  const rep = await runOrch(['report', id, '--json', '--results', res], c.env);
  assert.ok(rep.code !== null && rep.code !== 1 && rep.code !== 2, rep.stderr);
  const events = readFileSync(join(res, id, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { block: number; attempt: number; committed: boolean; event: { type?: string } });
  const lost = events.filter((e) => e.block === 0 && e.attempt === 1);
  const kept = events.filter((e) => e.block === 0 && e.attempt === 2);
  assert.ok(lost.length > 0 && lost.every((e) => !e.committed), 'the lost attempt is in events.jsonl, not committed');
  assert.ok(kept.some((e) => e.event.type === 'rep') && kept.every((e) => e.committed));
  const summary = JSON.parse(readFileSync(join(res, id, 'summary.json'), 'utf8')) as {
    accounting: { measured: number; planned: number };
  };
  assert.equal(summary.accounting.measured, summary.accounting.planned);
});
