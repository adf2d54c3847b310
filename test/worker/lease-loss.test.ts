/**
 * Losing the lease kills the ranks: kill -9 of a worker mid-block (fate-sharing, leases free
 * within two heartbeats, the block reruns on another host, no rep of the killed attempt counted);
 * a revocation by the scheduler (pub/sub: at once, long before the next renew); a renew that
 * finds the lease gone (within one heartbeat); a forged revocation or cancel notice, which Redis
 * state does not bear out, is ignored.
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LeaseStore } from '../../store/lease-store.ts';
import { ResultStore } from '../../store/result-store.ts';
import { BareExperimentDispatcher, blockJob } from '../utils/block-jobs.ts';
import { rankPids, readEvents, waitForEvents } from '../utils/events.ts';
import { isAlive, waitGone } from '../utils/processes.ts';
import { freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

const HB = 400;

describe('lease loss kills the ranks', () => {
  const env = useWorkerEnv('loss');

  async function grant(leases: LeaseStore, host: string, cards: string[], block: number) {
    const g = await leases.acquireGang({ cards, owner: host, ttlMs: 5000, experiment: 'x', block });
    assert.ok(g.granted, `gang ${cards.join(',')} granted`);
    return g.epoch;
  }

  test('kill -9 of a worker mid-block: ranks gone, leases free within two heartbeats, block reruns elsewhere', async () => {
    const prefix = freshPrefix();
    const common = { prefix, cards: 'cpu:0,cpu:1', heartbeatMs: HB, env: { FIXTURE_REP_MS: '300' } };
    const [h1, _h2] = await Promise.all([env.spawn({ ...common, host: 'h1' }), env.spawn({ ...common, host: 'h2' })]);
    const leases = new LeaseStore(env.redis, { prefix });
    const results = new ResultStore(env.redis, { prefix });
    const dispatcher = new BareExperimentDispatcher(env.redis, { prefix, pollMs: 20, lostGraceMs: 200 });
    try {
      const cards1 = ['cpu:0@h1', 'cpu:1@h1'];
      const a1 = blockJob({
        experiment: 'x',
        block: 0,
        attempt: 1,
        epoch: await grant(leases, 'h1', cards1, 0),
        host: 'h1',
        cards: cards1,
      });
      await dispatcher.dispatch(a1);
      // mid-block: the first rep of attempt 1 has been measured and streamed
      const evs = await waitForEvents(
        env.redis,
        prefix,
        'x',
        'a rep of attempt 1',
        (e) => e.some((x) => x.attempt === 1 && x.event.type === 'rep'),
        15_000,
      );
      const pids = rankPids(evs, 1);
      assert.equal(pids.length, 2);
      assert.ok(pids.every(isAlive));

      const t0 = Date.now();
      h1?.child.kill('SIGKILL');
      const ranksGoneMs = await waitGone(pids, t0, 5000);
      await waitFor('leases of attempt 1 to be free', async () => (await leases.held(cards1)).length === 0, {
        timeoutMs: 5000,
        intervalMs: 5,
      });
      const leasesFreeMs = Date.now() - t0;
      console.log(
        `# kill -9: ranks gone after ${ranksGoneMs} ms; leases free after ${leasesFreeMs} ms (heartbeat ${HB} ms)`,
      );
      assert.ok(ranksGoneMs < 1000, `ranks gone within a second (${ranksGoneMs} ms)`);
      assert.ok(leasesFreeMs <= 2 * HB + 50, `leases free within two heartbeats (${leasesFreeMs} ms)`);

      const end1 = await dispatcher.waitEnd(a1, { timeoutMs: 10_000 });
      assert.equal(end1.state, 'lost');

      // the caller re-dispatches attempt 2 on another host's cards
      const cards2 = ['cpu:0@h2', 'cpu:1@h2'];
      const a2 = blockJob({
        experiment: 'x',
        block: 0,
        attempt: 2,
        epoch: await grant(leases, 'h2', cards2, 0),
        host: 'h2',
        cards: cards2,
      });
      await dispatcher.dispatch(a2);
      const end2 = await dispatcher.waitEnd(a2, { timeoutMs: 20_000 });
      assert.equal(end2.state, 'completed', JSON.stringify(end2));

      const res = Object.values(await results.results('x')) as { attempt: number; epoch: number; host: string }[];
      assert.equal(res.length, 4);
      assert.deepEqual(
        new Set(res.map((r) => `${r.attempt}/${r.epoch}/${r.host}`)),
        new Set([`2/${a2.epoch}/h2`]),
        'only attempt 2 counted',
      );
      assert.equal((await results.commits('x'))['0']?.attempt, 2);
      assert.deepEqual(await results.failed('x'), {});
      const streamed = await readEvents(env.redis, prefix, 'x');
      assert.ok(
        streamed.some((e) => e.attempt === 1 && e.epoch === a1.epoch && e.event.type === 'rep'),
        'attempt 1 stays visible in the stream',
      );
    } finally {
      await dispatcher.close();
    }
  });

  test('revocation by the scheduler kills the gang at once (long before the next renew)', async () => {
    const prefix = freshPrefix();
    const slowHb = 3000;
    const _w = await env.spawn({
      prefix,
      host: 'r1',
      cards: 'cpu:0,cpu:1',
      heartbeatMs: slowHb,
      env: { FIXTURE_REP_MS: '300' },
    });
    const leases = new LeaseStore(env.redis, { prefix });
    const results = new ResultStore(env.redis, { prefix });
    const dispatcher = new BareExperimentDispatcher(env.redis, { prefix, pollMs: 20 });
    try {
      const cards = ['cpu:0@r1', 'cpu:1@r1'];
      const job = blockJob({
        experiment: 'x',
        block: 1,
        attempt: 1,
        epoch: await grant(leases, 'r1', cards, 1),
        host: 'r1',
        cards,
      });
      await dispatcher.dispatch(job);
      const evs = await waitForEvents(
        env.redis,
        prefix,
        'x',
        'a rep',
        (e) => e.some((x) => x.event.type === 'rep'),
        15_000,
      );
      const pids = rankPids(evs, 1);
      const t0 = Date.now();
      assert.equal(await leases.revoke({ cards, epoch: job.epoch, reason: 'experiment cancelled' }), 2);
      const goneMs = await waitGone(pids, t0, 5000);
      console.log(`# revocation: ranks gone after ${goneMs} ms (renew period ${slowHb} ms)`);
      assert.ok(goneMs < 1000, `ranks gone at once (${goneMs} ms)`);
      const end = await dispatcher.waitEnd(job, { timeoutMs: 10_000 });
      assert.deepEqual(end, {
        state: 'failed',
        jobId: 'x.b1-a1-r1',
        unrecoverable: false,
        reason: `lease of block 1 attempt 1 (epoch ${job.epoch}) revoked: experiment cancelled`,
      });
      assert.deepEqual(await results.results('x'), {}, 'no rep of the revoked attempt counted');
      const failed = await results.failed('x');
      assert.equal(Object.keys(failed).length, 4);
      assert.equal(
        failed['1/A/0']?.reason,
        `attempt 1 failed: lease of block 1 attempt 1 (epoch ${job.epoch}) revoked: experiment cancelled`,
      );
    } finally {
      await dispatcher.close();
    }
  });

  test('a forged revocation or cancel notice (a PUBLISH that Redis state does not bear out) is ignored: the gang runs on and commits', async () => {
    const prefix = freshPrefix();
    const _w = await env.spawn({
      prefix,
      host: 'f1',
      cards: 'cpu:0',
      heartbeatMs: 3000,
      env: { FIXTURE_REP_MS: '300' },
    });
    const leases = new LeaseStore(env.redis, { prefix });
    const results = new ResultStore(env.redis, { prefix });
    const dispatcher = new BareExperimentDispatcher(env.redis, { prefix, pollMs: 20 });
    try {
      const cards = ['cpu:0@f1'];
      const job = blockJob({
        experiment: 'x',
        block: 3,
        attempt: 1,
        epoch: await grant(leases, 'f1', cards, 3),
        host: 'f1',
        cards,
      });
      await dispatcher.dispatch(job);
      const evs = await waitForEvents(
        env.redis,
        prefix,
        'x',
        'a rep',
        (e) => e.some((x) => x.block === 3 && x.event.type === 'rep'),
        15_000,
      );
      const pids = rankPids(
        evs.filter((e) => e.block === 3),
        1,
      );
      // what anyone who can reach Redis can send: revoke-gang.lua's message and a cancel notice, with no lease deleted and no cancel made
      await env.redis.publish(
        leases.keys.leaseRevoked,
        JSON.stringify({ cards, epochs: [job.epoch], reason: 'forged' }),
      );
      await env.redis.publish(
        leases.keys.leaseRevoked,
        JSON.stringify({ kind: 'cancel', cards, epochs: [job.epoch], reason: 'forged' }),
      );
      await new Promise((r) => setTimeout(r, 500));
      assert.ok(pids.every(isAlive), 'the ranks live on after the forged messages');
      const end = await dispatcher.waitEnd(job, { timeoutMs: 15_000 });
      assert.equal(end.state, 'completed', JSON.stringify(end));
      assert.equal(Object.keys(await results.results('x')).length, 4, 'every planned rep measured');
      assert.deepEqual(await results.failed('x'), {});
    } finally {
      await dispatcher.close();
    }
  });

  test('a renew that finds the lease gone kills the gang within one heartbeat', async () => {
    const prefix = freshPrefix();
    const _w = await env.spawn({
      prefix,
      host: 'n1',
      cards: 'cpu:0',
      heartbeatMs: HB,
      env: { FIXTURE_REP_MS: '300' },
    });
    const leases = new LeaseStore(env.redis, { prefix });
    const dispatcher = new BareExperimentDispatcher(env.redis, { prefix, pollMs: 20 });
    try {
      const cards = ['cpu:0@n1'];
      const job = blockJob({
        experiment: 'x',
        block: 2,
        attempt: 1,
        epoch: await grant(leases, 'n1', cards, 2),
        host: 'n1',
        cards,
      });
      await dispatcher.dispatch(job);
      const evs = await waitForEvents(
        env.redis,
        prefix,
        'x',
        'a rep',
        (e) => e.some((x) => x.block === 2 && x.event.type === 'rep'),
        15_000,
      );
      const pids = rankPids(
        evs.filter((e) => e.block === 2),
        1,
      );
      const t0 = Date.now();
      await env.redis.del(leases.keys.lease('cpu:0@n1')); // expired or deleted behind the worker's back: no message
      const goneMs = await waitGone(pids, t0, 5000);
      console.log(`# failed renew: ranks gone after ${goneMs} ms (renew period ${HB} ms)`);
      assert.ok(goneMs <= HB + 200, `ranks gone within one renew period (${goneMs} ms)`);
      const end = await dispatcher.waitEnd(job, { timeoutMs: 10_000 });
      assert.equal(end.state, 'failed');
      assert.equal(
        end.state === 'failed' && end.reason,
        `lease of card cpu:0@n1 lost (missing) by block 2 attempt 1 (epoch ${job.epoch})`,
      );
    } finally {
      await dispatcher.close();
    }
  });
});
