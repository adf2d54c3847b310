/**
 * Records at rest are parsed with their schemas as they are read back: a plan, spec or block
 * state written by hand (or by another orch version) into Redis fails the read with
 * STORED_RECORD_INVALID, naming the key, the field and the schema path, instead of being handed
 * to the scheduler and failing later as a TypeError where something walks it. The experiment is
 * a real one (planned and registered by submitExperiment); each record is then broken by hand.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { codeOf, kindOf } from '../../jobs/error-codes.ts';
import { OrchError } from '../../jobs/errors.ts';
import { planExperiment } from '../../jobs/plan.ts';
import { submitExperiment } from '../../orchestrator/experiment/submit.ts';
import { loadSpec } from '../../orchestrator/spec/load-spec.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { ExperimentStore, initialBlockState } from '../../store/experiment-store.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { ResultStore } from '../../store/result-store.ts';
import { readStepHistory } from '../../store/step-history.ts';
import { abSpec, startScheduler } from '../orchestrator/in-process-scheduler.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';

/** Two one-rank A/B blocks of the fixture workload. */
const SPEC = abSpec('rest', 2, 2);

/** The read rejects with STORED_RECORD_INVALID and a message matching each of `parts`. */
async function refused(read: Promise<unknown>, ...parts: (string | RegExp)[]): Promise<void> {
  await assert.rejects(read, (err: unknown) => {
    assert.ok(err instanceof OrchError, `an OrchError, not ${String(err)}`);
    assert.equal(codeOf(err), 'STORED_RECORD_INVALID');
    assert.equal(kindOf(err), 'deterministic');
    for (const p of parts)
      typeof p === 'string'
        ? assert.ok(err.message.includes(p), `"${p}" in: ${err.message}`)
        : assert.match(err.message, p);
    return true;
  });
}

describe('records at rest, parsed as they are read back', () => {
  const r = privateRedis();
  const dir = mkdtempSync(join(tmpdir(), 'orch-rest-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function submitted(): Promise<{ prefix: string; id: string; store: ExperimentStore }> {
    const prefix = freshPrefix();
    const file = join(dir, `${prefix}.yaml`);
    writeFileSync(file, SPEC);
    const { id } = await submitExperiment({ redis: r.redis, prefix, loaded: loadSpec(file) });
    return { prefix, id, store: new ExperimentStore(r.redis, prefix) };
  }

  test('a registered experiment reads back as planned: spec and plan round-trip their schemas', async () => {
    const { id, store } = await submitted();
    const got = await store.get(id);
    const loaded = loadSpec(join(dir, `${store.prefix}.yaml`));
    assert.deepEqual(got?.spec, loaded.spec);
    assert.deepEqual(got?.plan, planExperiment(loaded.spec, loaded.hash));
    assert.deepEqual(await store.blocks(id), [initialBlockState(0), initialBlockState(1)]);
  });

  test('a plan or spec written by hand fails ExperimentStore.get, naming the key, field and schema path', async () => {
    const { id, store } = await submitted();
    const key = store.keys.exp(id);
    const plan = JSON.parse((await r.redis.hget(key, 'plan'))!) as { blocks: { index: number; sequence?: string[] }[] };
    delete plan.blocks[1]!.sequence;
    await r.redis.hset(key, 'plan', JSON.stringify(plan));
    await refused(store.get(id), `${key} field plan: blocks.1.sequence:`);

    await r.redis.hset(key, 'plan', '{"hash":');
    await refused(store.get(id), `${key} field plan is not JSON: {"hash":`);

    const { id: id2, store: store2 } = await submitted();
    const key2 = store2.keys.exp(id2);
    const spec = JSON.parse((await r.redis.hget(key2, 'spec_json'))!) as Record<string, unknown>;
    await r.redis.hset(key2, 'spec_json', JSON.stringify({ ...spec, reps: 'five' }));
    await refused(store2.get(id2), `${key2} field spec_json: reps:`);

    await r.redis.hset(key2, 'spec_json', JSON.stringify(spec));
    await r.redis.hset(key2, 'state', 'runing');
    await refused(store2.get(id2), `${key2} field state:`, '"runing"');
    await refused(store2.state(id2), `${key2} field state:`);
  });

  test('a block state written by hand fails every read of it, and a compare-and-set refused over it', async () => {
    const { id, store } = await submitted();
    const key = store.sched.blocks(id);
    const bad = { ...initialBlockState(1), phase: 'runing', gang: [{ host: 'h', cards: ['c'], job: 'j' }] };
    await r.redis.hset(key, '1', JSON.stringify(bad));
    await refused(store.blocks(id), `${key} field 1: `, 'phase:', 'gang.0.epoch:');
    await refused(store.block(id, 1), `${key} field 1: `, 'phase:');
    assert.deepEqual(await store.block(id, 0), initialBlockState(0), 'the other block still reads');
    // the script compares phase and attempt; what it hands back as the state stored now is parsed too
    const to = { ...initialBlockState(1), phase: 'running' as const, attempt: 1 };
    await refused(store.transitionBlock(id, { phase: 'waiting', attempt: 0 }, to), `${key} field 1: `, 'phase:');
    await refused(store.beginAttempt(id, 0, to), `${key} field 1: `, 'phase:');
  });

  test('the scheduler over a block state written by hand: its grant pass fails with the code and the key, not silently', async () => {
    const { prefix, id, store } = await submitted();
    const key = store.sched.blocks(id);
    await r.redis.hset(key, '1', JSON.stringify({ ...initialBlockState(1), phase: 'runing' }));
    const sched = await startScheduler({ url: r.server.url, prefix, grantTtlMs: 3000, safetyPollMs: 300 });
    try {
      type Logged = { msg: string; err?: { code?: string; type?: string; message?: string } };
      const refusal = (l: Logged) =>
        l.err?.code === 'STORED_RECORD_INVALID' && (l.err.message ?? '').startsWith(`${key} field 1: phase: `);
      await waitFor('the grant pass to name the record', () => (sched.log() as Logged[]).some(refusal), {
        timeoutMs: 10_000,
      });
      assert.deepEqual(
        (sched.log() as Logged[]).filter((l) => l.err?.type === 'TypeError'),
        [],
        'no TypeError further on',
      );
    } finally {
      await sched.stop();
    }
  });

  test('the scheduler over a plan written by hand: that experiment fails with the code, the one behind it is still scheduled', async () => {
    const { prefix, id, store } = await submitted();
    await r.redis.hset(
      store.keys.exp(id),
      'plan',
      JSON.stringify({ ...(await store.get(id))!.plan, blocks: [{ index: 0 }] }),
    );
    const file = join(dir, `${prefix}-next.yaml`);
    writeFileSync(file, SPEC);
    const { id: next } = await submitExperiment({ redis: r.redis, prefix, loaded: loadSpec(file) });
    const sched = await startScheduler({ url: r.server.url, prefix, grantTtlMs: 3000, safetyPollMs: 300 });
    try {
      await waitFor('the bad experiment to fail', async () => (await store.state(id)) === 'failed', {
        timeoutMs: 10_000,
      });
      const reason = await r.redis.hget(store.keys.exp(id), 'reason');
      assert.match(reason ?? '', /^STORED_RECORD_INVALID: .*field plan: blocks\.0\.sequence/);
      // no card is registered: the next experiment waits with a reason the grant pass wrote
      await waitFor(
        'the next experiment to get a waiting reason',
        async () => (await store.blocks(next))[0]?.why ?? null,
        { timeoutMs: 10_000 },
      );
      assert.equal(await store.state(next), 'queued');
    } finally {
      await sched.stop();
    }
  });

  test("step history, a host's card list and a block's commit record written by hand fail their reads", async () => {
    const prefix = freshPrefix();
    const history = `${prefix}:sched:history`;
    await r.redis.hset(history, 'w1', '{"ms_per_step":"fast","n":3}');
    await refused(readStepHistory(r.redis, prefix, 'w1'), `${history} field w1: ms_per_step:`);

    const reg = new CardRegistry(r.redis, { prefix });
    await r.redis.hset(reg.keys.host('h1'), { pid: '1', started: '1', cards: '"cpu:0@h1"' });
    await refused(reg.hostInfo('h1'), `${reg.keys.host('h1')} field cards: `);

    const results = new ResultStore(r.redis, { prefix });
    await r.redis.hset(results.keys.commits('x'), '0', '{"epoch":3,"host":"h1"}');
    await refused(results.committedAttempt('x', 0), `${results.keys.commits('x')} field 0: attempt:`);
    // commit-block hands the prior commit record back: parsed on the way out as well
    await r.redis.hset(results.keys.exp('x'), 'state', 'running');
    const leases = new LeaseStore(r.redis, { prefix });
    const g = await leases.acquireGang({ cards: ['k0'], owner: 'h1', ttlMs: 5000, experiment: 'x', block: 0 });
    assert.ok(g.granted);
    await refused(
      results.commitBlock({
        experiment: 'x',
        block: 0,
        attempt: 1,
        epoch: g.epoch,
        host: 'h1',
        cards: ['k0'],
        reps: [],
        notRun: [],
        gates: [],
      }),
      `${results.keys.commits('x')} field 0: attempt:`,
    );
  });
});
