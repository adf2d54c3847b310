/**
 * The real execution path: `orch worker` running resident `graphrt serve` ranks (CPU backend) on
 * a gang of two cards — identity gates first (a frozen pointer must fail at replay 2), then the
 * reps in the planned order, every graphrt line streamed and tagged, the block committed once.
 * Skips, saying so, when native/build/graphrt has not been built, except under CI (test/native/graphrt.ts).
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LeaseStore } from '../../store/lease-store.ts';
import { ResultStore } from '../../store/result-store.ts';
import { skipWithoutBinary } from '../native/graphrt.ts';
import { BareExperimentDispatcher, blockJob } from '../utils/block-jobs.ts';
import { rankPids, readEvents, waitForEvents } from '../utils/events.ts';
import { isAlive, waitGone } from '../utils/processes.ts';
import { freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

const GRAPHRT = fileURLToPath(new URL('../../native/build/graphrt', import.meta.url));

describe('worker with real graphrt ranks', { skip: skipWithoutBinary }, () => {
  const env = useWorkerEnv('graphrt');

  test('a gang of two graphrt ranks: gates, reps in order, lines streamed, block committed', async () => {
    const prefix = freshPrefix();
    await env.spawn({ prefix, host: 'r1', cards: 'cpu:0,cpu:1', graphrt: GRAPHRT });
    const leases = new LeaseStore(env.redis, { prefix });
    const results = new ResultStore(env.redis, { prefix });
    const dispatcher = new BareExperimentDispatcher(env.redis, { prefix, pollMs: 20 });
    try {
      const cards = ['cpu:0@r1', 'cpu:1@r1'];
      const g = await leases.acquireGang({ cards, owner: 'r1', ttlMs: 10_000, experiment: 'n', block: 0 });
      assert.ok(g.granted);
      const job = blockJob({
        experiment: 'n',
        block: 0,
        attempt: 1,
        epoch: g.epoch,
        host: 'r1',
        cards,
        workload: {
          runtime: 'native',
          backend: 'cpu',
          kind: 'decode',
          params: { layers: 2, kernels_per_layer: 12, hidden: 64, max_pos: 64 },
          warmup: 1,
          steps: 3,
        },
        arms: [
          { name: 'eager', toggles: { graph: false } },
          { name: 'graph', toggles: { graph: true } },
          { name: 'frozen', toggles: { graph: true, freeze_pointer: true } },
        ],
        sequence: ['eager', 'graph', 'frozen', 'frozen', 'graph', 'eager'],
        gates: { identity: { replays: 3 }, aa: false },
        steps: 3,
      });
      await dispatcher.dispatch(job);
      const end = await dispatcher.waitEnd(job, { timeoutMs: 60_000 });
      assert.equal(end.state, 'completed', JSON.stringify(end));

      // The committed block is what graphrt answered: gate verdicts and rep lines, rank by rank.
      const evs0 = await readEvents(env.redis, prefix, 'n');
      const line = (rank: string, type: string, id: string) =>
        evs0.find((e) => e.rank === rank && e.event.type === type && e.event.id === id)?.event;
      const gates = (await results.gates('n')) as Record<string, { pass: boolean; first_bad_replay: number | null }>;
      assert.deepEqual(Object.keys(gates).sort(), ['0/frozen', '0/graph'], 'identity gate for each arm with graph on');
      for (const [i, arm] of ['graph', 'frozen'].entries()) {
        const answers = ['0', '1'].map(
          (r) =>
            line(r, 'gate', `b0-a1-identity${i}`) as unknown as {
              pass: boolean;
              mode: string;
              first_bad_replay: number | null;
            },
        );
        assert.equal(
          gates[`0/${arm}`]?.pass,
          answers.every((x) => x.pass),
          `gate ${arm}: pass as the ranks said`,
        );
        if (arm === 'frozen') {
          if (answers.every((x) => x.mode === 'graph')) {
            assert.equal(gates['0/frozen']?.pass, false, 'the planted frozen pointer is caught');
            assert.equal(gates['0/frozen']?.first_bad_replay, 2);
          } else
            console.log(
              `# graphrt did not capture the frozen arm (gate mode ${answers.map((x) => x.mode).join('/')}): frozen-pointer catch not checked here`,
            );
        }
      }

      const reps = (await results.results('n')) as Record<
        string,
        { backend: string; mode: string; step_ms: number[]; hashes: string[]; position: number; epoch: number }
      >;
      assert.deepEqual(Object.keys(reps).sort(), [
        '0/eager/0',
        '0/eager/1',
        '0/frozen/0',
        '0/frozen/1',
        '0/graph/0',
        '0/graph/1',
      ]);
      for (const r of Object.values(reps)) {
        const [l0, l1] = ['0', '1'].map(
          (rank) =>
            line(rank, 'rep', `b0-a1-rep${r.position}`) as unknown as {
              backend: string;
              mode: string;
              step_ms: number[];
              hashes: string[];
            },
        );
        assert.equal(r.backend, 'cpu');
        assert.equal(r.mode, l0?.mode);
        assert.deepEqual(r.hashes, l0?.hashes);
        assert.equal(r.step_ms.length, 3);
        assert.deepEqual(
          r.step_ms,
          l0?.step_ms.map((x, k) => Math.max(x, l1?.step_ms[k] as number)),
          'the gang step is the slowest rank',
        );
        assert.equal(r.epoch, g.epoch);
      }
      assert.deepEqual(
        reps['0/graph/0']?.hashes,
        reps['0/eager/0']?.hashes,
        'the graph arm computes what eager computes',
      );

      const evs = (await readEvents(env.redis, prefix, 'n')).filter((e) => e.rank !== '');
      for (const rank of ['0', '1']) {
        const mine = evs.filter((e) => e.rank === rank);
        assert.equal(mine[0]?.event.type, 'hello');
        assert.equal(mine[0]?.card, cards[Number(rank)]);
        const order = mine
          .filter((e) => e.event.type === 'gate' || e.event.type === 'rep')
          .map((e) => `${e.event.type}:${String(e.event.arm)}`);
        assert.deepEqual(
          order,
          ['gate:graph', 'gate:frozen', ...job.sequence.map((a) => `rep:${a}`)],
          `rank ${rank}: gates first, then the planned order`,
        );
        assert.ok(mine.every((e) => e.block === 0 && e.attempt === 1 && e.epoch === g.epoch && e.host === 'r1'));
      }
    } finally {
      await dispatcher.close();
    }
  });

  test('kill -9 of the worker mid-rep: the graphrt ranks die with it, the leases expire within two heartbeats', async () => {
    const prefix = freshPrefix();
    const hb = 400;
    const w = await env.spawn({ prefix, host: 'k1', cards: 'cpu:0,cpu:1', graphrt: GRAPHRT, heartbeatMs: hb });
    const leases = new LeaseStore(env.redis, { prefix });
    const cards = ['cpu:0@k1', 'cpu:1@k1'];
    const g = await leases.acquireGang({ cards, owner: 'k1', ttlMs: 10_000, experiment: 'k', block: 0 });
    assert.ok(g.granted);
    const dispatcher = new BareExperimentDispatcher(env.redis, { prefix });
    try {
      // decode reps of 400 steps: the kill lands inside a rep, not between requests
      const job = blockJob({
        experiment: 'k',
        block: 0,
        attempt: 1,
        epoch: g.epoch,
        host: 'k1',
        cards,
        steps: 400,
        workload: {
          runtime: 'native',
          backend: 'cpu',
          kind: 'decode',
          params: { layers: 8, kernels_per_layer: 12, hidden: 256, max_pos: 4096 },
          warmup: 1,
          steps: 400,
        },
        gates: { identity: null, aa: false },
      });
      await dispatcher.dispatch(job);
      const evs = await waitForEvents(
        env.redis,
        prefix,
        'k',
        'the first rep',
        (e) => e.some((x) => x.event.type === 'rep'),
        30_000,
      );
      const pids = rankPids(evs, 1);
      assert.equal(pids.length, 2);
      assert.ok(pids.every(isAlive), 'ranks alive, busy with the next rep');
      const t0 = Date.now();
      w.child.kill('SIGKILL');
      const goneMs = await waitGone(pids, t0, 5000);
      await waitFor('leases free', async () => (await leases.held(cards)).length === 0, {
        timeoutMs: 5000,
        intervalMs: 5,
      });
      const freeMs = Date.now() - t0;
      console.log(
        `# kill -9 with graphrt ranks: ranks gone after ${goneMs} ms; leases free after ${freeMs} ms (heartbeat ${hb} ms)`,
      );
      assert.ok(goneMs < 1000, `graphrt ranks gone within a second (${goneMs} ms)`);
      assert.ok(freeMs <= 2 * hb + 50, `leases free within two heartbeats (${freeMs} ms)`);
    } finally {
      await dispatcher.close();
    }
  });
});
