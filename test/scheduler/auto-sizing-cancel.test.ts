/**
 * `orch cancel` of an auto-sized experiment (blocks.reps_per_block: auto) whose later block waits
 * for cards (real redis-server, the production Scheduler in-process, no worker: no card is live,
 * so nothing is granted). The later blocks' processors start while block 0 is open and hold the
 * term's copy of the experiment, the registered plan; block 0's commit is then played as the
 * leader writes it: the sizing beside the plan, the emptied block stopped, block 0 ended done with
 * its reps measured. The cancel ends the sized block: every rep of it is `cancelled`, none
 * `not measured`, though the processor's copy planned fewer reps in it than the sized plan does
 * (the settling records the rest by the block's phase: experiment-settling.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { plannedReps, repKey } from '../../jobs/rep-ref.ts';
import { cancelExperiment } from '../../orchestrator/experiment/cancel.ts';
import { accountReps } from '../../orchestrator/results/rep-fates.ts';
import { blocksLeftEmpty, HELD_FOR_SIZING } from '../../orchestrator/scheduler/auto-block-sizing.ts';
import { failWaitingBlocks } from '../../orchestrator/scheduler/fail-waiting-blocks.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { ResultStore } from '../../store/result-store.ts';
import {
  type InProcessScheduler,
  startScheduler,
  submitYaml,
  waitEnded,
} from '../orchestrator/in-process-scheduler.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { slowStartSpec } from '../utils/slow-start-spec.ts';
import { waitFor } from '../utils/wait-for.ts';

const env = privateRedis();
const dir = mkdtempSync(join(tmpdir(), 'orch-auto-cancel-'));
let sched: InProcessScheduler | null = null;
after(async () => {
  await sched?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const REPS = 2;
/** block 0 of REPS per arm, then the 2 · REPS reps per arm left sized into block 1; block 2 emptied */
const SIZES = [2 * REPS];

test('orch cancel of a sized later block waiting for cards: every rep of it cancelled, none not run', async () => {
  const { redis, server } = env;
  const prefix = freshPrefix('ac');
  const id = await submitYaml(
    redis,
    prefix,
    dir,
    'auto-cancel',
    slowStartSpec('auto-cancel', { prepareS: 0, setupS: 0, tail: `reps: ${REPS}\nblocks: { count: 3 }\n` }),
  );
  const store = new ExperimentStore(redis, prefix);
  const results = new ResultStore(redis, { prefix });
  const registered = (await store.get(id))!;
  assert.equal(registered.plan.reps_per_block, 'auto');
  sched = await startScheduler({ url: server.url, prefix, safetyPollMs: 200 });
  await waitFor(
    'the later blocks held for block 0',
    async () => (await store.blocks(id)).filter((b) => b.why === HELD_FOR_SIZING).length === 2,
    { timeoutMs: 20_000, intervalMs: 50 },
  );

  // block 0's commit as the leader records it (block-lifecycle.ts sizeAndStopEmptied): the
  // sizing, the emptied block stopped, then block 0 ended with its reps measured
  await store.writeBlockSizing(id, {
    sizes: SIZES,
    wanted: SIZES[0]!,
    held_by: 'remaining',
    startup_ms: 1000,
    lease_ms: 2000,
  });
  const sized = (await store.get(id))!;
  const empty = blocksLeftEmpty(sized)!;
  assert.deepEqual([...empty.blocks], [2]);
  await failWaitingBlocks({ store, results }, sized, empty.reason, 'stopped', empty.blocks);
  const keys = orchKeys(prefix);
  for (const r of plannedReps(sized.plan, 0))
    await redis.hset(
      keys.results(id),
      repKey(r),
      JSON.stringify({ experiment: id, ...r, attempt: 1, epoch: 1, step_ms: [1], backend: 'cpu', mode: 'eager' }),
    );
  const b0 = (await store.block(id, 0))!;
  const ended = await store.transitionBlock(id, b0, { ...b0, phase: 'done', why: null, ended_at: Date.now() });
  assert.ok(ended.written);
  await cancelExperiment(redis, prefix, id);
  assert.equal(await waitEnded(redis, prefix, id, 30_000), 'cancelled');
  assert.deepEqual(
    (await store.blocks(id)).map((b) => b.phase),
    ['done', 'cancelled', 'stopped'],
  );
  const measured = Object.fromEntries([...(await results.measuredFields(id))].map((f) => [f, true]));
  const a = accountReps(sized, measured, await results.failed(id));
  const arms = sized.plan.arms.length;
  assert.equal(a.planned, (REPS + SIZES[0]!) * arms);
  assert.deepEqual(a.unaccounted, []);
  assert.equal(a.measured, REPS * arms);
  assert.deepEqual(a.not_run_reasons, {}, 'a cancelled rep is cancelled, not "not measured"');
  assert.equal(a.cancelled, SIZES[0]! * arms, `every rep of the sized block 1 cancelled: ${JSON.stringify(a.reps)}`);
  assert.deepEqual(
    Object.values(a.cancelled_reasons),
    [SIZES[0]! * arms],
    'recorded at the block end or at settling, one reason',
  );
});
