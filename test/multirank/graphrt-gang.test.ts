/**
 * graphrt multi-rank on the CPU backend (native/PROTOCOL.md "Multi-rank"), real processes: four
 * ranks meet at one rendezvous, the decode workload's all-reduce per layer gives every rank the
 * same bits in graph and eager mode, a capture failure planted on one rank sends every rank to
 * eager, a killed rank makes the others fail fast, a rank that never comes is named. Every line is
 * parsed with the zod mirror (jobs/graphrt-protocol.ts).
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { only, runGraphrt, skipWithoutBinary } from '../native/graphrt.ts';
import { Gang, lineOf } from './gang.ts';

const LAYERS = 3;
const decode = (extra: Record<string, unknown>) => ({
  workload: 'decode',
  params: { layers: LAYERS, kernels_per_layer: 12, hidden: 32, max_pos: 16 },
  warmup: 1,
  steps: 4,
  ...extra,
});

describe('graphrt multi-rank (cpu)', { skip: skipWithoutBinary }, () => {
  test('4 ranks: one all-reduce per layer, graph replay = eager on every rank, identity gate passes on every rank', async () => {
    const gang = new Gang(4);
    try {
      const hellos = await gang.hellos();
      hellos.forEach((h, r) => {
        assert.equal(h.type, 'hello');
        if (h.type !== 'hello') return;
        assert.deepEqual([h.world, h.rank, h.features.collectives], [4, r, true]);
      });
      const gates = (
        await gang.askAll({
          id: 'g',
          op: 'identity',
          replays: 5,
          ...decode({ toggles: { graph: true, allreduce: true } }),
        })
      ).map((a) => lineOf(a, 'gate'));
      for (const [r, g] of gates.entries()) {
        assert.equal(g.rank, r);
        assert.equal(g.pass, true, `rank ${r}: ${JSON.stringify(g)}`);
        assert.equal(g.mode, 'graph', `rank ${r} captured`);
        assert.equal(g.collectives_per_step, LAYERS);
        assert.equal(g.nodes, g.launches_per_step + LAYERS, 'one graph node per captured all-reduce');
        assert.deepEqual(g.eager_hashes, gates[0]?.eager_hashes, `rank ${r} holds rank 0's sums`);
      }
      const eager = (await gang.askAll({ id: 'e', ...decode({ toggles: { allreduce: true } }) })).map((a) =>
        lineOf(a, 'rep'),
      );
      const graph = (await gang.askAll({ id: 'c', ...decode({ toggles: { graph: true, allreduce: true } }) })).map(
        (a) => lineOf(a, 'rep'),
      );
      for (let r = 0; r < 4; r++) {
        assert.deepEqual([eager[r]?.mode, graph[r]?.mode], ['eager', 'graph']);
        assert.deepEqual(
          [eager[r]?.collectives_per_step, graph[r]?.collectives_per_step, graph[r]?.world],
          [LAYERS, LAYERS, 4],
        );
        assert.deepEqual(
          graph[r]?.hashes,
          eager[0]?.hashes,
          `rank ${r}: graph replay = eager, bit for bit, on every rank`,
        );
      }
      // The sum is real: one rank alone (allreduce inert) computes something else from rank 0's shard.
      const alone = only(
        runGraphrt([
          'run',
          '--backend',
          'cpu',
          '--workload',
          'decode',
          '--layers',
          String(LAYERS),
          '--hidden',
          '32',
          '--max-pos',
          '16',
          '--warmup',
          '1',
          '--steps',
          '4',
          '--allreduce',
        ]).lines,
        'rep',
      );
      assert.deepEqual(alone.unsupported, ['allreduce']);
      assert.equal(alone.collectives_per_step, 0);
      assert.notDeepEqual(alone.hashes, eager[0]?.hashes, 'the all-reduce changes what a rank computes');
    } finally {
      gang.close();
    }
  });

  test('a capture failure planted on rank 2 only: the vote sends every rank to eager, no hang, results still equal', async () => {
    const gang = new Gang(4, { GRAPHRT_PLANT_LAZY_INIT_RANK: '2' });
    try {
      await gang.hellos();
      const answers = await gang.askAll({
        id: 'g',
        op: 'identity',
        replays: 3,
        ...decode({ toggles: { graph: true, allreduce: true } }),
      });
      for (const [r, a] of answers.entries()) {
        const c = lineOf(a, 'capture');
        assert.equal(c.ok, false, `rank ${r} must not keep a graph the others lack`);
        assert.deepEqual(c.failed_ranks, [2]);
        if (r !== 2) assert.match(c.ok ? '' : c.reason, /capture failed on rank\(s\) 2; every rank runs eager/);
        const g = lineOf(a, 'gate');
        assert.deepEqual([g.mode, g.pass], ['eager', true]);
      }
      const reps = (await gang.askAll({ id: 'r', ...decode({ toggles: { graph: true, allreduce: true } }) })).map((a) =>
        lineOf(a, 'rep'),
      );
      assert.ok(reps.every((x) => x.mode === 'eager' && x.nodes === null));
      assert.ok(reps.every((x) => JSON.stringify(x.hashes) === JSON.stringify(reps[0]?.hashes)));
    } finally {
      gang.close();
    }
  });

  test('kill -9 of one rank mid-rep: every other rank exits RANK_LOST (7) within a second', async () => {
    const gang = new Gang(4);
    try {
      await gang.hellos();
      const long = { id: 'long', ...decode({ steps: 100000, toggles: { graph: true, allreduce: true } }) };
      const victim = gang.ranks[2]!;
      victim.child.stdin.write(`${JSON.stringify(long)}\n`); // it never answers: no ask() waiting on it
      const pending = gang.ranks.map((r) => (r === victim ? Promise.resolve([]) : r.ask(long)));
      await new Promise((r) => setTimeout(r, 500)); // well inside the rep (seconds long)
      const t0 = Date.now();
      victim.child.kill('SIGKILL');
      const exits = await Promise.all(gang.ranks.filter((r) => r !== victim).map((r) => r.exited));
      const slowest = Math.max(...exits.map((e) => e.at - t0));
      console.log(
        `# rank 2 killed: ranks 0, 1, 3 exited ${exits.map((e) => `${e.code} after ${e.at - t0} ms`).join(', ')}`,
      );
      assert.deepEqual(
        exits.map((e) => e.code),
        [7, 7, 7],
      );
      assert.ok(slowest < 1000, `the gang failed within a second (${slowest} ms)`);
      for (const i of [0, 1, 3]) {
        const answer = await pending[i]!;
        const err = answer.find((l) => l.type === 'error');
        assert.ok(err && err.type === 'error' && err.code === 'RANK_LOST', `rank ${i}: ${JSON.stringify(answer)}`);
        assert.match(err.message, /rank 2/, 'the message names the lost rank');
      }
    } finally {
      gang.close();
    }
  });

  test('a rank that never comes: rank 0 gives up naming it (RANK_LOST); --world > 1 needs --rendezvous', () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-gang-'));
    try {
      const r = runGraphrt([
        'serve',
        '--backend',
        'cpu',
        '--world',
        '3',
        '--rank',
        '0',
        '--rendezvous',
        join(dir, 'rv.sock'),
        '--rendezvous-timeout-ms',
        '300',
      ]);
      assert.equal(r.code, 7);
      const e = only(r.lines, 'error');
      assert.equal(e.code, 'RANK_LOST');
      assert.match(e.message, /rank\(s\) 1, 2 did not reach the rendezvous/);
      const bad = runGraphrt(['serve', '--backend', 'cpu', '--world', '2', '--rank', '1']);
      assert.equal(bad.code, 2);
      assert.match(only(bad.lines, 'error').message, /--world 2 needs --rendezvous PATH/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
