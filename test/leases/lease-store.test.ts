import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { CardRegistry } from '../../store/card-registry.ts';
import { GangStaging } from '../../store/gang-staging.ts';
import { LeaseStore, type RevokeMessage } from '../../store/lease-store.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { ResultStore } from '../../store/result-store.ts';
import { commandName, scriptSource } from '../../store/scripts.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';

/** The commit of one block holding one measured rep (experiment x, arm A, rep 0), and that rep. */
function oneRepCommit(o: { block: number; attempt: number; epoch: number; cards: string[] }) {
  const { block, attempt, epoch } = o;
  const rep = {
    experiment: 'x',
    block,
    attempt,
    epoch,
    arm: 'A',
    rep: 0,
    position: 0,
    step_ms: [1],
    backend: 'cpu',
    mode: 'eager' as const,
  };
  const input = {
    experiment: 'x',
    block,
    attempt,
    epoch,
    host: 'h1',
    cards: o.cards,
    reps: [{ block, arm: 'A', rep: 0, result: rep }],
    notRun: [],
    gates: [],
  };
  return { rep, input };
}

describe('card leases (Lua, real redis-server)', () => {
  let server: RedisServerProcess;
  let redis: Redis;
  before(async () => {
    server = await startRedisServer();
    redis = client(server.url);
  });
  after(async () => {
    redis.disconnect();
    await server.stop();
  });

  test('a gang is granted all cards or none, each grant with a new epoch', async () => {
    const leases = new LeaseStore(redis, { prefix: freshPrefix() });
    const a = await leases.acquireGang({ cards: ['c0', 'c1'], owner: 'h1', ttlMs: 5000, experiment: 'e', block: 0 });
    assert.equal(a.granted, true);
    // c1 is held: c2 must not be taken either (all or none)
    const b = await leases.acquireGang({ cards: ['c2', 'c1'], owner: 'h1', ttlMs: 5000, experiment: 'e', block: 1 });
    assert.deepEqual(b, {
      granted: false,
      busy: { card: 'c1', owner: 'h1', epoch: a.granted ? a.epoch : -1, experiment: 'e', block: 0 },
    });
    assert.equal(await leases.get('c2'), null);
    const c = await leases.acquireGang({ cards: ['c2', 'c3'], owner: 'h2', ttlMs: 5000, experiment: 'e', block: 1 });
    assert.ok(c.granted && a.granted && c.epoch > a.epoch);
    const l = await leases.get('c0');
    assert.equal(l?.owner, 'h1');
    assert.equal(l?.block, 0);
    assert.ok(l && l.expires > Date.now() + 4000);
  });

  test('renew: only the owner, only under its epoch, all or nothing; expiry frees the cards', async () => {
    const leases = new LeaseStore(redis, { prefix: freshPrefix() });
    const a = await leases.acquireGang({ cards: ['g0', 'g1'], owner: 'h1', ttlMs: 300, experiment: 'e', block: 0 });
    assert.ok(a.granted);
    assert.deepEqual(await leases.renew({ cards: ['g0', 'g1'], owner: 'h2', epoch: a.epoch, ttlMs: 5000 }), {
      ok: false,
      card: 'g0',
      reason: 'owner h1',
    });
    assert.deepEqual(await leases.renew({ cards: ['g0', 'g1'], owner: 'h1', epoch: a.epoch + 1, ttlMs: 5000 }), {
      ok: false,
      card: 'g0',
      reason: `epoch ${a.epoch}`,
    });
    assert.deepEqual(await leases.renew({ cards: ['g0', 'g1'], owner: 'h1', epoch: a.epoch, ttlMs: 400 }), {
      ok: true,
    });
    assert.ok((await redis.pttl(leases.keys.lease('g1'))) > 300);
    await waitFor('leases to expire', async () => (await leases.held(['g0', 'g1'])).length === 0, { timeoutMs: 2000 });
    assert.deepEqual(await leases.renew({ cards: ['g0', 'g1'], owner: 'h1', epoch: a.epoch, ttlMs: 400 }), {
      ok: false,
      card: 'g0',
      reason: 'missing',
    });
  });

  test('release deletes only what the epoch still holds; revoke deletes and publishes', async () => {
    const leases = new LeaseStore(redis, { prefix: freshPrefix() });
    const a = await leases.acquireGang({ cards: ['r0'], owner: 'h1', ttlMs: 5000, experiment: 'e', block: 0 });
    assert.ok(a.granted);
    assert.equal(await leases.release({ cards: ['r0'], epoch: a.epoch + 7 }), 0);
    assert.equal(await leases.release({ cards: ['r0'], epoch: a.epoch }), 1);
    const b = await leases.acquireGang({ cards: ['r0', 'r1'], owner: 'h1', ttlMs: 5000, experiment: 'e', block: 1 });
    assert.ok(b.granted);
    const sub = redis.duplicate();
    const got: RevokeMessage[] = [];
    await sub.subscribe(leases.keys.leaseRevoked);
    sub.on('message', (_ch, msg) => got.push(JSON.parse(msg)));
    try {
      assert.equal(await leases.revoke({ cards: ['r0', 'r1'], epoch: b.epoch, reason: 'cancelled' }), 2);
      await waitFor('revoke message', () => got.length === 1, { timeoutMs: 2000 });
      assert.deepEqual(got[0], { cards: ['r0', 'r1'], epochs: [b.epoch, b.epoch], reason: 'cancelled' });
      assert.deepEqual(await leases.renew({ cards: ['r0', 'r1'], owner: 'h1', epoch: b.epoch, ttlMs: 5000 }), {
        ok: false,
        card: 'r0',
        reason: 'missing',
      });
    } finally {
      sub.disconnect();
    }
  });

  test('a block commits once, only while its epoch holds every card', async () => {
    const prefix = freshPrefix();
    const leases = new LeaseStore(redis, { prefix });
    const results = new ResultStore(redis, { prefix });
    const a = await leases.acquireGang({ cards: ['k0', 'k1'], owner: 'h1', ttlMs: 5000, experiment: 'x', block: 3 });
    assert.ok(a.granted);
    // every write of the worker needs the experiment to exist (a Redis that lost its data gets no orphan keys)
    assert.equal(
      await results.failReps('x', 3, 1, [{ block: 3, arm: 'A', rep: 0, position: 0, reason: 'rank 1 exited 3' }]),
      -1,
    );
    await redis.hset(results.keys.exp('x'), 'state', 'running');
    await results.failReps('x', 3, 1, [{ block: 3, arm: 'A', rep: 0, position: 0, reason: 'rank 1 exited 3' }]);
    const { rep, input } = oneRepCommit({ block: 3, attempt: 2, epoch: a.epoch, cards: ['k0', 'k1'] });
    // revoked: refused, nothing written
    await leases.revoke({ cards: ['k1'], reason: 'test' });
    assert.deepEqual(await results.commitBlock(input), { committed: false, why: 'epoch', card: 'k1', holder: null });
    assert.deepEqual(await results.results('x'), {});
    const b = await leases.acquireGang({ cards: ['k1'], owner: 'h2', ttlMs: 5000, experiment: 'x', block: 4 });
    assert.ok(b.granted);
    assert.deepEqual(await results.commitBlock(input), { committed: false, why: 'epoch', card: 'k1', holder: b.epoch });
    await leases.release({ cards: ['k1'], epoch: b.epoch });
    const c = await leases.acquireGang({ cards: ['k1'], owner: 'h1', ttlMs: 5000, experiment: 'x', block: 3 });
    assert.ok(c.granted);
    await leases.release({ cards: ['k0'], epoch: a.epoch });
    const d = await leases.acquireGang({ cards: ['k0'], owner: 'h1', ttlMs: 5000, experiment: 'x', block: 3 });
    assert.ok(d.granted);
    // a gang under mixed epochs is refused as well
    assert.equal((await results.commitBlock({ ...input, epoch: c.epoch })).committed, false);
    await leases.release({ cards: ['k0'], epoch: d.epoch });
    await leases.release({ cards: ['k1'], epoch: c.epoch });
    const e = await leases.acquireGang({ cards: ['k0', 'k1'], owner: 'h1', ttlMs: 5000, experiment: 'x', block: 3 });
    assert.ok(e.granted);
    assert.deepEqual(await results.commitBlock({ ...input, epoch: e.epoch }), { committed: true });
    assert.deepEqual(await results.results('x'), { '3/A/0': rep });
    assert.deepEqual(await results.failed('x'), {}, 'the measured rep is no longer failed');
    const again = await results.commitBlock({ ...input, attempt: 3, epoch: e.epoch });
    assert.equal(again.committed, false);
    assert.equal(again.committed === false && again.why, 'committed');
    assert.equal(await results.failReps('x', 3, 3, [{ block: 3, arm: 'A', rep: 0, position: 0, reason: 'late' }]), 0);
  });

  test('a commit Redis ran and whose reply was lost, sent again, is the commit it made (not BLOCK_ALREADY_COMMITTED)', async () => {
    const prefix = freshPrefix();
    const leases = new LeaseStore(redis, { prefix });
    const a = await leases.acquireGang({ cards: ['s0'], owner: 'h1', ttlMs: 5000, experiment: 'x', block: 1 });
    assert.ok(a.granted);
    // ioredis sends an unanswered command again on its new connection (a Redis restarted with its
    // AOF between running the script and replying): the script runs twice, the second reply returns
    const resending = new Proxy(redis, {
      get(target, name, receiver) {
        const v = Reflect.get(target, name, receiver);
        if (name !== commandName('commit-block') || typeof v !== 'function') return v;
        return async (...args: unknown[]) => {
          await v.apply(target, args);
          return v.apply(target, args);
        };
      },
    });
    await redis.hset(new ResultStore(redis, { prefix }).keys.exp('x'), 'state', 'running');
    const results = new ResultStore(resending, { prefix });
    const { rep, input } = oneRepCommit({ block: 1, attempt: 1, epoch: a.epoch, cards: ['s0'] });
    assert.deepEqual(await results.commitBlock(input), { committed: true });
    assert.deepEqual(await results.results('x'), { '1/A/0': rep });
    // another call of the same attempt (a new record) is still refused
    const again = await results.commitBlock(input);
    assert.equal(again.committed === false && again.why, 'committed');
  });

  /**
   * The three writes of an attempt's results under a stale epoch (card f1 of the gang re-granted
   * to another), each through its store on `conn`: what each answered and what reached Redis.
   */
  async function staleWrites(conn: Redis) {
    const prefix = freshPrefix();
    const leases = new LeaseStore(conn, { prefix });
    const results = new ResultStore(conn, { prefix });
    const staging = new GangStaging(conn, { prefix });
    const a = await leases.acquireGang({ cards: ['f0', 'f1'], owner: 'h1', ttlMs: 5000, experiment: 'x', block: 3 });
    assert.ok(a.granted);
    await conn.hset(results.keys.exp('x'), 'state', 'running');
    await leases.revoke({ cards: ['f1'], reason: 'test' });
    const b = await leases.acquireGang({ cards: ['f1'], owner: 'h2', ttlMs: 5000, experiment: 'x', block: 4 });
    assert.ok(b.granted);
    const id = { experiment: 'x', block: 3, attempt: 2, epoch: a.epoch, arm: 'A', rep: 0, position: 0 };
    const rep = { ...id, step_ms: [1], backend: 'cpu', mode: 'eager' as const };
    const probe = {
      ...id,
      backend: 'cpu' as const,
      host: 'h1',
      ranks: [{ rank: 0, card: 'f0', device: 'cpu', probes: [] }],
    };
    const cards = ['f0', 'f1'];
    const ref = { experiment: 'x', block: 3, attempt: 2 };
    return {
      stale: a.epoch,
      holder: b.epoch,
      // in the order of a real attempt: probes, then the part staged, then the commit
      probes: await results.commitProbes({ ...ref, epoch: a.epoch, cards, records: [probe] }),
      stage: await staging.stage(
        ref,
        a.epoch,
        { host: 'h1', cards, reps: [{ block: 3, arm: 'A', rep: 0, result: rep }], gates: [], ranks: [], hosts: [] },
        5000,
      ),
      commit: await results.commitBlock({
        ...ref,
        epoch: a.epoch,
        host: 'h1',
        cards,
        reps: [{ block: 3, arm: 'A', rep: 0, result: rep }],
        notRun: [],
        gates: [],
      }),
      written: {
        results: await conn.hlen(results.keys.results('x')),
        probes: await conn.hlen(results.keys.probes('x')),
        staged: await conn.hlen(staging.keys.staged('x', 3, 2)),
      },
    };
  }

  test('the lease fence (include/lease-fence.lua) refuses commit-block, commit-probes and stage-part under a stale epoch', async () => {
    const w = await staleWrites(redis);
    assert.deepEqual(w.commit, { committed: false, why: 'epoch', card: 'f1', holder: w.holder });
    assert.deepEqual(w.probes, {
      written: false,
      why: `card f1 is leased under epoch ${w.holder}, not epoch ${w.stale}`,
    });
    assert.deepEqual(w.stage, { staged: false, card: 'f1', holder: w.holder });
    assert.deepEqual(w.written, { results: 0, probes: 0, staged: 0 }, 'nothing of a stale attempt reached Redis');

    // the planted bug: the same scripts with the fence include emptied write all three, so the
    // assertions above are what the fence alone decides
    const fence = readFileSync(new URL('../../store/lua/include/lease-fence.lua', import.meta.url), 'utf8');
    const unfenced = client(server.url);
    try {
      for (const name of ['commit-block', 'commit-probes', 'stage-part']) {
        const lua = scriptSource(name);
        assert.ok(lua.includes(fence), `${name}.lua takes its fence from the include`);
        unfenced.defineCommand(`orch_${name.replace(/-/g, '_')}`, {
          lua: lua.replace(fence, 'local function lease_fence() return nil end\n'),
        });
      }
      const u = await staleWrites(unfenced);
      assert.deepEqual([u.commit, u.probes, u.stage], [{ committed: true }, { written: true }, { staged: true }]);
      assert.deepEqual(u.written, { results: 1, probes: 1, staged: 1 });
    } finally {
      unfenced.disconnect();
    }
  });

  test('card registry: live cards are those of heartbeating hosts', async () => {
    const reg = new CardRegistry(redis, { prefix: freshPrefix() });
    const card = (host: string, index: number) => ({
      id: `cpu:${index}@${host}`,
      host,
      backend: 'cpu' as const,
      index,
      uuid: `cpu:${index}@${host}`,
      name: 'cpu',
    });
    await reg.register('a', [card('a', 0), card('a', 1)], { ttlMs: 5000, pid: 1 });
    await reg.register('b', [card('b', 0)], { ttlMs: 200, pid: 2 });
    assert.deepEqual(
      (await reg.liveCards()).map((c) => c.id),
      ['cpu:0@a', 'cpu:1@a', 'cpu:0@b'],
    );
    await reg.register('a', [card('a', 1)], { ttlMs: 5000, pid: 1 });
    assert.deepEqual(
      (await reg.liveCards('a')).map((c) => c.id),
      ['cpu:1@a'],
    );
    await waitFor('host b to look dead', async () => (await reg.liveCards('b')).length === 0, { timeoutMs: 2000 });
    assert.equal(await reg.heartbeat('b', 5000), false);
    assert.deepEqual(
      (await reg.liveCardsByHost()).get('b')?.map((c) => c.id),
      ['cpu:0@b'],
    );
    assert.equal((await reg.hostInfo('a')).alive, true);
  });
});
