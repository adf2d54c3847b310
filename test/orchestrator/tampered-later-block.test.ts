/**
 * A later block of an auto-sized experiment (blocks.reps_per_block: auto, the default for a
 * resident command) is granted after block 0 committed its sizing, and its processor reads the
 * experiment again for the sized plan (orchestrator/scheduler/block-lifecycle.ts). That copy was
 * never admitted: anyone who could write to Redis after the submit could rewrite its spec_json
 * (the workload's command) and the scheduler signed a host job of it. Now a record read again is
 * checked against its submit signature before any job (attempt-observer.ts): the block fails with
 * SUBMIT_UNAUTHORIZED and no job of the rewritten spec is dispatched. Real `orch serve` and
 * `orch worker` against a real redis-server.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { slowStartSpec } from '../utils/slow-start-spec.ts';
import { waitFor } from '../utils/wait-for.ts';
import { type Cluster, runOrch, startServeAndWorker } from './orch-cluster.ts';

let cluster: Cluster | null = null;
after(async () => cluster?.stop());

test("a later block's record rewritten in Redis after the submit: the block fails SUBMIT_UNAUTHORIZED, no job of it", {
  timeout: 120_000,
}, async () => {
  cluster = await startServeAndWorker({ cpuCards: 1, repMs: 0 });
  const c = cluster;
  const file = join(c.fixtureLog, '..', 'tampered.yaml');
  writeFileSync(file, slowStartSpec('tampered', { prepareS: 0, setupS: 0, tail: 'reps: 2\nblocks: { count: 2 }\n' }));
  const sub = await runOrch(['submit', file, '--no-wait'], c.env);
  assert.equal(sub.code, 0, sub.stderr);
  const id = sub.stdout.trim();
  const store = new ExperimentStore(c.redis, c.prefix);
  // block 0 granted: its processor holds the admitted copy; block 1's will read the record again
  await waitFor('block 0 granted', async () => ((await store.blocks(id))[0]?.attempt ?? 0) > 0, {
    timeoutMs: 60_000,
    intervalMs: 20,
  });
  const key = orchKeys(c.prefix).exp(id);
  const spec = JSON.parse((await c.redis.hget(key, 'spec_json')) ?? '{}');
  spec.workload.run.cmd = '/bin/sh -c "echo rewritten in redis"';
  await c.redis.hset(key, 'spec_json', JSON.stringify(spec));

  await waitFor(
    'the experiment ends',
    async () => ['done', 'failed', 'cancelled'].includes((await store.state(id)) ?? ''),
    {
      timeoutMs: 60_000,
    },
  );
  const [b0, b1] = await store.blocks(id);
  assert.equal(b0?.phase, 'done', JSON.stringify(b0));
  assert.equal(b1?.phase, 'failed', JSON.stringify(b1));
  assert.match(b1?.reason ?? '', /^SUBMIT_UNAUTHORIZED: the scheduler refused experiment /);
  const jobs = await c.redis.keys(`*host-h1*${id}.b1-*`);
  assert.deepEqual(jobs, [], 'a host job of block 1 was dispatched');
});
