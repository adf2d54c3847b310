/**
 * Settling an experiment: the leader's grant pass runs this once it reads every block of an
 * active experiment in an end phase (grant-loop.ts). Every planned rep ends measured or recorded
 * as not measured; then the experiment's state is final and it leaves the scheduler's queue.
 * Idempotent: a leader that dies halfway leaves it active, and the next one settles it again.
 */

import { cancelledRep } from '../../jobs/failed-rep.ts';
import { groupedBlockReasons } from '../../jobs/grouped-reasons.ts';
import { plannedReps } from '../../jobs/rep-ref.ts';
import { ExperimentBuildStore } from '../../store/experiment-builds.ts';
import { TERMINAL_BLOCK_PHASES } from '../../store/experiment-store.ts';
import { buildFailureReason } from './build-phase.ts';
import type { SchedulerContext, Term } from './scheduler-context.ts';

export async function settleExperiment(ctx: SchedulerContext, experiment: string, term: Term): Promise<void> {
  const { store, results, log } = ctx;
  const exp = await store.get(experiment);
  if (!exp) throw new Error(`experiment ${experiment} is not registered`);
  if (term.aborted) return;
  // The pass settles only when every block ended; one that has not (read here again, after the
  // pass) failed, whatever its record says.
  for (const b of await store.blocks(experiment)) {
    if (TERMINAL_BLOCK_PHASES.has(b.phase)) continue;
    const reason = `the block ended without an outcome (${b.why ?? b.reason ?? 'see the scheduler log'})`;
    const w = await store.transitionBlock(experiment, b, { ...b, phase: 'failed', reason, ended_at: Date.now() });
    if (!w.written)
      log.warn({ experiment, block: b.block, stored: w.current?.phase }, 'block state moved while settling');
  }
  const blocks = await store.blocks(experiment);
  const byIndex = new Map(blocks.map((s) => [s.block, s]));
  // every block's account at once (independent scripts, one round trip): one after another, an
  // experiment of 32 blocks took 32 round trips to settle on a busy scheduler
  await Promise.all(
    exp.plan.blocks.map((b) => {
      const st = byIndex.get(b.index);
      if (!st) return null;
      // A rep of a block ended cancelled went with it, whichever plan its end was recorded from:
      // the processor of an auto-sized later block cancelled while it waited holds the plan read
      // before the sizing, with fewer reps in it, and a first block that commits whole as the
      // cancel lands sizes the later blocks after they ended (block-lifecycle.ts endBlock).
      const reason = `not measured: block ${b.index} ended ${st.phase} without this rep`;
      const reps = plannedReps(exp.plan, b.index).map((r) =>
        st.phase === 'cancelled' ? { ...r, ...cancelledRep(st.reason) } : { ...r, reason },
      );
      return results.accountReps(experiment, b.index, st.attempt, reps);
    }),
  );
  const state = await store.state(experiment);
  const bad = blocks.filter((b) => b.phase === 'failed');
  // A build that failed before any card was leased ended every block with one reason: say it once.
  const build = await new ExperimentBuildStore(ctx.redis, ctx.prefix).failure(experiment);
  const refused = ctx.refusal(exp);
  if (state === 'cancelling' || state === 'cancelled') {
    await store.finish(experiment, 'cancelled', exp.reason ?? 'cancelled');
  } else if (refused !== null) {
    // a submission the scheduler refused (submit-admission.ts): its one reason, said once
    await store.finish(experiment, 'failed', refused);
  } else if (build) {
    await store.finish(experiment, 'failed', buildFailureReason(build));
  } else if (blocks.some((b) => b.phase === 'cancelled')) {
    await store.finish(experiment, 'cancelled', exp.reason ?? 'cancelled');
  } else if (bad.length > 0) {
    await store.finish(experiment, 'failed', groupedBlockReasons(bad));
  } else {
    await store.finish(experiment, 'done', null);
  }
  await store.deactivate(experiment);
  log.info(
    { experiment, state: await store.state(experiment), blocks: blocks.map((b) => b.phase) },
    'experiment ended',
  );
}
