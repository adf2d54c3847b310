// Bad input at submit (real redis-server, `orch serve`, an `orch worker` with 2 cpu cards on host
// h1, the real CLI): an invalid spec changes nothing in Redis; more ranks per block than the
// largest host has cards is refused naming that host; a cuda-only spec with no CUDA card waits
// and `orch status` says why — or, with --no-wait, is refused at once. So is a command workload
// whose `requires` (cuda, min_memory_gb) no card meets: "no card here can run this", the spec
// file, the requirement and the cards.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { Redis } from 'ioredis';
import { EXIT_CODES } from '../../orchestrator/report/outcome-exit-code.ts';
import { waitFor } from '../utils/wait-for.ts';
import { type Cluster, runOrch, spawnOrch, startCluster } from './orch-cluster.ts';

let cluster: Cluster | null = null;
after(async () => cluster?.stop());

/**
 * Every key with its serialized value (keys with a TTL — heartbeats — by name only; a host's record
 * without its `seen`, the time of the worker's last heartbeat, which store/card-registry.ts
 * refreshes while the submits run).
 */
async function snapshot(redis: Redis): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const k of (await redis.keys('*')).sort()) {
    if ((await redis.pttl(k)) > 0) out[k] = 'volatile';
    else if (/:host:[^:]+$/.test(k)) {
      const { seen: _heartbeat, ...rest } = await redis.hgetall(k);
      out[k] = JSON.stringify(rest);
    } else out[k] = (await redis.dumpBuffer(k))?.toString('base64') ?? 'gone';
  }
  return out;
}

test('bad input at submit', async () => {
  cluster = await startCluster();
  const c = cluster;
  c.startServe();
  await c.startWorker({ cpuCards: 2, repMs: 50 });
  // the worker's (blocks and, with --allow-command, builds) and the scheduler's queues settle first
  // (their meta keys are theirs, not submit's; the build queue's came after the snapshot once)
  for (const q of ['host-h1', 'build-h1', 'nightly']) {
    await waitFor(`queue ${q} ready`, async () => (await c.redis.exists(`${c.prefix}:${q}:meta`)) === 1, {
      timeoutMs: 20_000,
      intervalMs: 50,
    });
  }
  const before = await snapshot(c.redis);

  const [invalid, tooMany, cudaNoWait, requiresCuda, requiresMemory] = await Promise.all([
    runOrch(['submit', 'test/fixtures/bad-specs/aa-not-boolean.yaml'], c.env),
    runOrch(['submit', 'test/fixtures/specs/three-ranks.yaml'], c.env),
    runOrch(['submit', 'test/fixtures/specs/cuda-only.yaml', '--no-wait'], c.env),
    runOrch(['submit', 'test/fixtures/specs/requires-cuda.yaml', '--no-wait'], c.env),
    runOrch(['submit', 'test/fixtures/specs/requires-memory.yaml', '--no-wait'], c.env),
  ]);
  console.log(
    `invalid: ${invalid.stderr.trim()}\ntoo many ranks: ${tooMany.stderr.trim()}\ncuda --no-wait: ${cudaNoWait.stderr.trim()}\nrequires cuda --no-wait: ${requiresCuda.stderr.trim()}\nrequires memory --no-wait: ${requiresMemory.stderr.trim()}`,
  );
  assert.equal(invalid.code, 2);
  assert.match(invalid.stderr, /aa-not-boolean\.yaml:\d+ gates\.aa/);
  assert.equal(tooMany.code, 2);
  assert.match(tooMany.stderr, /needs 3 cards on one host; the largest host, h1, has 2/);
  assert.equal(cudaNoWait.code, 2);
  assert.match(cudaNoWait.stderr, /cannot start now: no cuda card is registered \(cards: 2 cpu@h1\)/);
  assert.equal(requiresCuda.code, 2, requiresCuda.stderr);
  assert.match(
    requiresCuda.stderr,
    /no card here can run this: test\/fixtures\/specs\/requires-cuda\.yaml: workload\.requires \[cuda\]; cards: 2 cpu@h1/,
  );
  assert.match(requiresCuda.stderr, /hint: .*change workload\.requires/);
  assert.equal(requiresMemory.code, 2, requiresMemory.stderr);
  assert.match(
    requiresMemory.stderr,
    /no card here can run this: \S+requires-memory\.yaml: workload\.requires \[cuda, min_memory_gb: 80\]; cards: 2 cpu@h1/,
  );
  assert.deepEqual(await snapshot(c.redis), before, 'refused submits changed nothing in Redis');

  // Without --no-wait each is accepted and waits; status says why.
  const cudaStatus = await waitsAndSaysWhy(c, 'cuda-only.yaml', /block 0 {2}waiting: no cuda card is registered/);
  assert.match(cudaStatus, /cpu:0@h1 +h1 +cpu +alive +free/);
  await waitsAndSaysWhy(
    c,
    'requires-cuda.yaml',
    /block 0 {2}waiting: no card is registered that can run this: workload\.requires \[cuda\]; cards: 2 cpu@h1/,
  );
});

/** Submits test/fixtures/specs/`spec` without --no-wait, waits until `orch status` says `why`, cancels it; the status. */
async function waitsAndSaysWhy(c: Cluster, spec: string, why: RegExp): Promise<string> {
  const known = new Set(await c.redis.zrange(`${c.prefix}:exps`, '0', '-1'));
  // its results go under the cluster's temporary directory, never the checkout's results/
  const waiting = spawnOrch(['submit', `test/fixtures/specs/${spec}`, '--results', `${c.fixtureLog}.results`], c.env);
  const id = await waitFor(
    `the ${spec} experiment registered`,
    async () => (await c.redis.zrange(`${c.prefix}:exps`, '0', '-1')).find((e) => !known.has(e)),
    { timeoutMs: 40_000, intervalMs: 50 },
  );
  const status = await waitFor(
    `status says why ${spec} waits`,
    async () => {
      const s = await runOrch(['status', id], c.env);
      return why.test(s.stdout) ? s.stdout : null;
    },
    { timeoutMs: 40_000, intervalMs: 200 },
  );
  console.log(status);
  const cancel = await runOrch(['cancel', id], c.env);
  assert.equal(cancel.code, 0, cancel.stderr);
  const end = await waiting.exited;
  // a cancelled run exits with the cancelled outcome's code (orchestrator/report/outcome-exit-code.ts), headed CANCELLED
  assert.equal(end.code, EXIT_CODES.cancelled, waiting.out());
  assert.match(waiting.out(), /^# \S+: CANCELLED$/m);
  return status;
}
