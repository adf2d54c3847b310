/**
 * blocks.reps_per_block: auto from a first block cut short (real redis-server): a worker stopped
 * gracefully commits block 0 after a few reps, the rest recorded not run, and the block ends
 * committed. The leader's sizing (auto-block-sizing.ts sizeLaterBlocks, reading the commit record
 * and the results from Redis) takes its time per rep over the reps it measured, so the later blocks
 * are sized as a whole block of those reps would size them; a block that measured none sizes
 * nothing, and the log says why.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { pino } from 'pino';
import type { CommitRecord } from '../../jobs/commit-record.ts';
import { plannedReps, repKey } from '../../jobs/rep-ref.ts';
import { FIRST_BLOCK, sizeLaterBlocks, sizingFromCommit } from '../../orchestrator/scheduler/auto-block-sizing.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { ResultStore } from '../../store/result-store.ts';
import { submitYaml } from '../orchestrator/in-process-scheduler.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { slowStartSpec } from '../utils/slow-start-spec.ts';

const env = privateRedis();
const dir = mkdtempSync(join(tmpdir(), 'orch-auto-cut-short-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const REPS = 10;
const REP_MS = 500;
/** 1 s to every hello, 40 ms of gates */
const timeline = (reps: number): CommitRecord => ({
  attempt: 1,
  epoch: 1,
  host: 'h',
  started: 1_000_000,
  ready: 1_001_000,
  gated: 1_001_040,
  committed: 1_001_040 + reps * REP_MS,
});

/** An auto experiment whose block 0 committed `ran` reps, the rest recorded not run (worker/block-commit.ts). */
async function cutShort(ran: number) {
  const { redis } = env;
  const prefix = freshPrefix('cs');
  const name = `cut-short-${ran}`;
  const id = await submitYaml(
    redis,
    prefix,
    dir,
    name,
    slowStartSpec(name, { prepareS: 0, setupS: 0, tail: `reps: ${REPS}\nblocks: { count: 20 }\n` }),
  );
  const store = new ExperimentStore(redis, prefix);
  const exp = (await store.get(id))!;
  assert.equal(exp.plan.reps_per_block, 'auto');
  const keys = orchKeys(prefix);
  await redis.hset(keys.commits(id), String(FIRST_BLOCK), JSON.stringify(timeline(ran)));
  for (const r of plannedReps(exp.plan, FIRST_BLOCK)) {
    const ranIt = r.position < ran;
    await redis.hset(
      ranIt ? keys.results(id) : keys.failed(id),
      repKey(r),
      JSON.stringify(
        ranIt
          ? { experiment: id, ...r, attempt: 1, epoch: 1, step_ms: [1], backend: 'cpu', mode: 'eager' }
          : {
              ...r,
              attempt: 1,
              reason: 'not run: the worker of host h was stopped (SIGTERM) before this rep (attempt 1)',
            },
      ),
    );
  }
  const lines: { msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as { msg: string });
      done();
    },
  });
  const ctx = {
    store,
    results: new ResultStore(redis, { prefix }),
    registry: new CardRegistry(redis, { prefix }),
  };
  const written = await sizeLaterBlocks(ctx, exp, pino(sink));
  return { exp, written, sized: await store.get(id), lines };
}

describe('auto block sizing from a first block cut short', () => {
  test('2 of 10 reps per arm measured: the later blocks sized by its time per measured rep', async () => {
    const arms = 2;
    const { exp, written, sized } = await cutShort(2 * arms);
    assert.ok(written);
    const whole = plannedReps(exp.plan, FIRST_BLOCK).length;
    // the same block run whole at the same time per rep; no card is live: one gang at a time
    const expected = sizingFromCommit(exp.plan, timeline(whole), 1, whole)!;
    assert.deepEqual(sized?.plan.sized, expected, 'sized as a whole block of reps that long');
    assert.equal(expected.lease_ms, 1040 + arms * (expected.sizes[0] ?? 0) * REP_MS);
  });

  test('none measured: no time per rep, the later blocks run as registered, the log says why', async () => {
    const { written, sized, lines } = await cutShort(0);
    assert.equal(written, false);
    assert.equal(sized?.plan.sized, undefined);
    assert.equal(sized?.registeredPlan, undefined);
    assert.ok(
      lines.some((l) =>
        /^auto block sizing: the first block measured no rep .*; the later blocks run as registered$/.test(l.msg),
      ),
      JSON.stringify(lines),
    );
  });
});
