/**
 * A gang across hosts: two real `orch worker`s on this machine as hosts s1 and s2 (two cpu cards
 * each, the same Redis, loopback addresses), a real `orch serve` scheduler, and `orch submit` of a
 * 4-rank block with `placement: spread`. The block runs 2 + 2: rank 0 on s1 listens on TCP, s2's
 * ranks join with the attempt's secret; identity passes on every rank, every rank holds the same
 * hashes, and the block is committed once, by s1, with all four cards. Then kill -9 of s2's worker
 * in the middle of a rep fails the gang and frees all four cards within two heartbeats.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { describe, test } from 'node:test';
import { GRAPHRT, skipWithoutBinary } from '../native/graphrt.ts';
import { runOrch, spawnOrch } from '../orchestrator/orch-cluster.ts';
import { freshPrefix } from '../utils/redis.ts';
import { readWritten } from '../utils/submit-spec.ts';
import { waitFor } from '../utils/wait-for.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

const HEARTBEAT_MS = 1000;

function spec(dir: string, steps: number): string {
  const file = join(dir, `spread4-${steps}.yaml`);
  writeFileSync(
    file,
    `name: spread4
design: ab
workload:
  runtime: native
  backend: cpu
  kind: decode
  params: { layers: 2, kernels_per_layer: 12, hidden: 32, max_pos: 16 }
  warmup: 1
  steps: ${steps}
toggles: [graph, allreduce]
arms:
  - { name: eager, toggles: { allreduce: true } }
  - { name: graph, toggles: { graph: true, allreduce: true } }
reps: 2
blocks: { count: 1, ranks: 4, placement: spread }
gates:
  identity: { replays: 3 }
  aa: false
metric: { name: ms_per_step, better: lower }
`,
  );
  return file;
}

interface Ev {
  rank: number | string;
  host?: string;
  event: Record<string, unknown>;
}

describe('a 4-rank gang spread 2 + 2 over two hosts (cpu, TCP rendezvous)', { skip: skipWithoutBinary }, () => {
  const env = useWorkerEnv('spread');

  async function cluster(prefix: string) {
    const workerEnv = { ORCH_ADVERTISE_ADDR: '127.0.0.1', ORCH_LOG: 'info' };
    const s1 = await env.spawn({
      prefix,
      host: 's1',
      cards: 'cpu:0,cpu:1',
      graphrt: GRAPHRT,
      heartbeatMs: HEARTBEAT_MS,
      env: workerEnv,
    });
    const s2 = await env.spawn({
      prefix,
      host: 's2',
      cards: 'cpu:0,cpu:1',
      graphrt: GRAPHRT,
      heartbeatMs: HEARTBEAT_MS,
      env: workerEnv,
    });
    const orchEnv = { REDIS_URL: env.server.url, ORCH_PREFIX: prefix, ORCH_LOG: 'warn' };
    const serve = spawnOrch(['serve', '--leader-ttl', '1500', '--json'], orchEnv);
    return { s1, s2, serve, orchEnv };
  }

  test('identity on every rank, the same hashes on every rank, one commit of all four ranks by the leading host', async () => {
    const prefix = freshPrefix();
    const { serve, orchEnv } = await cluster(prefix);
    const dir = mkdtempSync(join(tmpdir(), 'orch-spread-'));
    try {
      const r = await runOrch(['submit', spec(dir, 3), '--results', join(dir, 'out')], orchEnv, 90_000);
      const written = readWritten<Ev>(join(dir, 'out'), `exit ${r.code}: ${r.stderr.slice(-2000)}`);
      const { summary, events } = written;
      const id = basename(written.dir);
      assert.equal(summary.state, 'done', r.stderr.slice(-2000));
      assert.deepEqual([summary.accounting.planned, summary.accounting.measured], [4, 4]);
      const ofType = (type: string) => events.filter((e) => e.event.type === type && e.rank !== '');
      const hellos = ofType('hello');
      assert.deepEqual(hellos.map((e) => `${String(e.rank)}@${e.host}`).sort(), ['0@s1', '1@s1', '2@s2', '3@s2']);
      assert.ok(hellos.every((e) => e.event.world === 4 && Number(e.rank) === e.event.rank));
      const gates = ofType('gate');
      assert.equal(gates.length, 4, 'the graph arm is gated on every rank');
      for (const g of gates) assert.deepEqual([g.event.pass, g.event.mode], [true, 'graph'], JSON.stringify(g));
      assert.equal(
        new Set(gates.map((g) => JSON.stringify(g.event.graph_hashes))).size,
        1,
        'identity hashes identical across ranks',
      );
      const reps = ofType('rep');
      assert.equal(reps.length, 16, '4 reps x 4 ranks');
      for (const rid of new Set(reps.map((e) => e.event.id))) {
        const same = reps.filter((e) => e.event.id === rid);
        assert.equal(
          new Set(same.map((e) => JSON.stringify(e.event.hashes))).size,
          1,
          `rep ${String(rid)}: every rank holds the same output`,
        );
      }
      const commits = await env.redis.hgetall(`${prefix}:experiment:${id}:commits`);
      assert.deepEqual(Object.keys(commits), ['0'], 'one commit');
      assert.equal(JSON.parse(commits['0']!).host, 's1', 'committed by the leading host');
      const results = Object.values(await env.redis.hgetall(`${prefix}:experiment:${id}:results`)).map(
        (v) => JSON.parse(v) as { cards: string[] },
      );
      assert.equal(results.length, 4);
      for (const res of results) assert.deepEqual(res.cards, ['cpu:0@s1', 'cpu:1@s1', 'cpu:0@s2', 'cpu:1@s2']);
      const gateRecords = Object.values(await env.redis.hgetall(`${prefix}:experiment:${id}:gates`)).map(
        (v) => JSON.parse(v) as { pass: boolean; detail: { rank: number }[] },
      );
      assert.deepEqual(
        gateRecords.map((g) => [g.pass, g.detail.map((d) => d.rank)]),
        [[true, [0, 1, 2, 3]]],
      );
      assert.deepEqual(await env.redis.keys(`${prefix}:experiment:${id}:staged:*`), [], 'staged parts cleaned up');
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("kill -9 of one host's worker mid-rep fails the gang and frees all four cards within two heartbeats", async () => {
    const prefix = freshPrefix();
    const { s1, s2, serve, orchEnv } = await cluster(prefix);
    const dir = mkdtempSync(join(tmpdir(), 'orch-spread-'));
    const submit = spawnOrch(['submit', spec(dir, 3000), '--results', join(dir, 'out')], orchEnv);
    try {
      const leaseKeys = () => env.redis.keys(`${prefix}:lease:*`);
      await waitFor('four cards leased', async () => (await leaseKeys()).length === 4, { timeoutMs: 30_000 });
      const stream = async () => {
        const ids = await env.redis.keys(`${prefix}:experiment:*:events`);
        return ids.length === 1 ? (await env.redis.xrange(ids[0]!, '-', '+')).map(([, f]) => f.join(' ')) : [];
      };
      await waitFor(
        'every rank in the first rep',
        async () => (await stream()).filter((l) => l.includes('"type":"capture"')).length >= 4,
        { timeoutMs: 30_000 },
      );
      const epochs = async () => new Set(await Promise.all((await leaseKeys()).map((k) => env.redis.hget(k, 'epoch'))));
      const [epoch] = await epochs();
      assert.ok(epoch, 'the gang holds one epoch on all four cards');
      const t0 = Date.now();
      s2.child.kill('SIGKILL');
      // the attempt's leases, not whatever a retry is granted next on cards whose host still looks alive
      await waitFor('every lease of the attempt gone', async () => !(await epochs()).has(epoch), {
        timeoutMs: 10_000,
        intervalMs: 20,
      });
      const freedMs = Date.now() - t0;
      console.log(`# worker s2 killed: all four cards of the attempt free after ${freedMs} ms`);
      if (process.env.SPREAD_DEBUG)
        console.log(
          s1
            .log()
            .split('\n')
            .filter((l) => /fail|revok|lost/i.test(l))
            .map((l) => l.slice(0, 400))
            .join('\n'),
        );
      assert.ok(freedMs < 2 * HEARTBEAT_MS, `all four cards free within two heartbeats (${freedMs} ms)`);
    } finally {
      submit.child.kill('SIGKILL');
      serve.child.kill('SIGTERM');
      await Promise.all([submit.exited, serve.exited]);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
