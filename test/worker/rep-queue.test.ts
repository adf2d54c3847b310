/**
 * The one-deep request pipeline of a resident graphrt rank (worker/graphrt-runner.ts): a request
 * written while the one before is answered is read by graphrt once it has written that answer, so
 * the next rep starts without the worker's turnaround. Real graphrt (CPU backend): answers stay
 * matched to their requests by id and arm, in order, and the rank's spans do not overlap; a third
 * request is refused; two bad requests in a row are each answered with their error line (serving
 * goes on); a request that times out takes the one queued behind it with it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import type { Card } from '../../jobs/card.ts';
import { GraphrtRunner } from '../../worker/graphrt-runner.ts';
import { armOf, type RankHandle, type RankLine, type RankOp } from '../../worker/rank-runner.ts';
import { skipWithoutBinary } from '../native/graphrt.ts';
import { blockJob } from '../utils/block-jobs.ts';

const GRAPHRT = fileURLToPath(new URL('../../native/build/graphrt', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'orch-rep-queue-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const card: Card = { id: 'cpu:0@q', host: 'q', backend: 'cpu', index: 0, uuid: 'cpu:0@q', name: 'cpu' };

function start(steps: number, kernelsPerLayer = 12): { h: RankHandle; job: ReturnType<typeof blockJob> } {
  const job = blockJob({
    experiment: 'q',
    block: 0,
    attempt: 1,
    epoch: 1,
    host: 'q',
    cards: [card.id],
    workload: {
      runtime: 'native',
      backend: 'cpu',
      kind: 'decode',
      params: { layers: 2, kernels_per_layer: kernelsPerLayer, hidden: 64, max_pos: 64 },
      warmup: 1,
      steps,
    },
    arms: [
      { name: 'A', toggles: { graph: false } },
      { name: 'B', toggles: { graph: true } },
    ],
    sequence: ['A', 'B', 'A'],
    steps,
    warmup: 1,
  });
  const h = new GraphrtRunner(GRAPHRT).start({
    job,
    rank: 0,
    world: 1,
    card,
    lockPath: join(dir, `card-${steps}-${kernelsPerLayer}.lock`),
    log: pino({ level: 'silent' }),
    onLine: () => {},
  });
  return { h, job };
}

const rep = (job: ReturnType<typeof blockJob>, i: number, arm: string): RankOp => ({
  id: `r${i}`,
  op: 'rep',
  arm: armOf(job, arm),
});
type Rep = Extract<RankLine, { type: 'rep'; backend: 'cpu' | 'cuda' }>;

describe('one-deep request pipeline of a graphrt rank', { skip: skipWithoutBinary }, () => {
  test('a queued rep starts when the one before is answered; answers matched by id and arm, in order', async () => {
    const { h, job } = start(4);
    try {
      await h.ready;
      assert.equal(
        h.queues?.(rep(job, 0, 'A'), rep(job, 1, 'B')),
        true,
        'one process serves every arm: requests queue',
      );
      const first = h.request(rep(job, 0, 'A'), 30_000);
      const second = h.request(rep(job, 1, 'B'), 30_000);
      await assert.rejects(h.request(rep(job, 2, 'A'), 30_000), /r0 and r1 already in flight/);
      const [a, b] = (await Promise.all([first, second])) as [Rep, Rep];
      assert.equal(a.type, 'rep');
      assert.equal(b.type, 'rep');
      assert.deepEqual([a.id, a.arm, b.id, b.arm], ['r0', 'A', 'r1', 'B']);
      assert.ok((b.t_start_ns as number) >= (a.t_end_ns as number), 'one rep at a time, in order');
      console.log(
        `# gap between a rep and the one queued behind it: ${(((b.t_start_ns as number) - (a.t_end_ns as number)) / 1e6).toFixed(3)} ms`,
      );
      // the pipeline drained: a request after both is served as before
      const c = (await h.request(rep(job, 2, 'A'), 30_000)) as Rep;
      assert.deepEqual([c.type, c.id, c.arm], ['rep', 'r2', 'A']);
    } finally {
      await h.close(5_000);
    }
  });

  test('a bad request and one queued behind it: each answered with its own error line', async () => {
    // kernels_per_layer 4 is below graphrt's range: BAD_PARAM, answered, and serving goes on
    const { h, job } = start(4, 4);
    try {
      await h.ready;
      const lines = (await Promise.all([
        h.request(rep(job, 0, 'A'), 30_000),
        h.request(rep(job, 1, 'B'), 30_000),
      ])) as Extract<RankLine, { type: 'error' }>[];
      assert.deepEqual(
        lines.map((l) => [l.type, l.id, l.code]),
        [
          ['error', 'r0', 'BAD_PARAM'],
          ['error', 'r1', 'BAD_PARAM'],
        ],
      );
      assert.deepEqual(h.pids().length, 1, 'the rank serves on');
    } finally {
      await h.close(5_000);
    }
  });

  test('a request that times out fails the one queued behind it', async () => {
    const { h, job } = start(20_000);
    try {
      await h.ready;
      const first = h.request(rep(job, 0, 'A'), 50);
      const second = h.request(rep(job, 1, 'A'), 30_000);
      await assert.rejects(first, /did not answer rep r0 \(arm A\) within 50 ms/);
      await assert.rejects(second, /rep r1 not answered: r0, written before it, timed out/);
    } finally {
      h.kill();
      await h.exited;
    }
  });
});
