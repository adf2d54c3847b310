/**
 * The rep pipeline (worker/rep-pipeline.ts) under `foreign_process: wait`, its rooms real (the
 * gang's fate, the foreign-process guard) and its ranks, measure and probe stand-ins: a foreign
 * process seen in the look while rep 2 runs is gone at the next look. On one host the reps it
 * ran beside (2, and 3, sent behind it) run again once it is gone; a spread gang's part fails the
 * attempt with the transient FOREIGN_PROCESS instead, so the whole gang runs again (its other
 * hosts never saw the process: a local re-run would put the parts' collectives reps apart).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import type { Card } from '../../jobs/card.ts';
import { retryable } from '../../jobs/error-codes.ts';
import { OrchError } from '../../jobs/errors.ts';
import { blockReps } from '../../jobs/rep-ref.ts';
import type { EventStream } from '../../worker/event-stream.ts';
import { ForeignGuard } from '../../worker/foreign-guard.ts';
import type { ForeignProcessProbe } from '../../worker/foreign-processes.ts';
import { GangContext } from '../../worker/gang-context.ts';
import { GangFate } from '../../worker/gang-fate.ts';
import type { GangRanks } from '../../worker/gang-ranks.ts';
import type { LiveProgress } from '../../worker/live-progress.ts';
import type { RepMeasure } from '../../worker/rep-measure.ts';
import { RepPipeline } from '../../worker/rep-pipeline.ts';
import { blockJob } from '../utils/block-jobs.ts';

const card: Card = { id: 'cpu:0@h', host: 'h', backend: 'cpu', index: 0, uuid: 'cpu:0@h', name: 'cpu' };

/** A pipeline of 4 planned reps; the probe's 2nd look (the one while rep 2 runs) finds a foreign process. */
function pipeline(spread: boolean) {
  const job = blockJob({
    experiment: 'fw',
    block: 0,
    attempt: 1,
    epoch: 1,
    host: 'h',
    cards: [card.id],
    foreign_process: 'wait',
    ...(spread ? { world: 2, first_rank: 0 } : {}),
  });
  const events = { worker: () => undefined, rankLine: () => undefined } as unknown as EventStream;
  const gang = new GangContext(job, 'h', events, pino({ level: 'silent' }));
  const fate = new GangFate(gang, spread, () => undefined);
  let looks = 0;
  const probe: ForeignProcessProbe = {
    list: async () => (++looks === 2 ? [{ pid: 4242, name: 'python train.py', via: 'card-lock' }] : []),
  };
  const guard = new ForeignGuard(
    gang,
    { cards: new Map([[card.id, card]]), lockPaths: ['/nonexistent.lock'], probe, pollMs: 5, stopping: () => false },
    fate,
  );
  const sent: number[] = [];
  const measure = {
    probing: false,
    measure: async (p: { position: number; arm: string; rep: number }) => {
      sent.push(p.position);
      await new Promise((r) => setTimeout(r, 20));
      return { rep: { block: 0, arm: p.arm, rep: p.rep, result: {} }, record: null };
    },
  } as unknown as RepMeasure;
  const ranks = { pids: () => [], queues: () => true } as unknown as GangRanks;
  const progress = { rep: () => undefined } as unknown as LiveProgress;
  const pipe = new RepPipeline(gang, ranks, measure, guard, fate, progress, { spread, stopping: () => false });
  return { pipe, sent, planned: blockReps(0, job.sequence) };
}

describe('the rep pipeline under foreign_process: wait', () => {
  test('on one host: the reps that ran beside the foreign process run again once it is gone', async () => {
    const { pipe, sent, planned } = pipeline(false);
    const out = await pipe.run(planned);
    assert.deepEqual(
      out.reps.map((r) => r.rep),
      [0, 0, 1, 1],
    );
    assert.deepEqual(sent, [0, 1, 2, 3, 2, 3]);
  });

  test("a spread gang's part: the attempt fails, transient, and no rep is run again on this host alone", async () => {
    const { pipe, sent, planned } = pipeline(true);
    await assert.rejects(pipe.run(planned), (err: unknown) => {
      assert.ok(err instanceof OrchError && err.code === 'FOREIGN_PROCESS', String(err));
      assert.ok(retryable(err), 'the whole gang is tried again');
      assert.match(err.message, /card cpu:0@h is used by a process that is not this block's.*4242/);
      assert.match(err.message, /gang across hosts/);
      return true;
    });
    assert.deepEqual(sent, [0, 1, 2, 3], 'reps 2 and 3 are not sent again');
  });
});
