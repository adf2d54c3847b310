/**
 * The host job payload for one host's part of a granted block attempt (jobs/block-job.ts),
 * from the registered experiment — the only place the scheduler turns a plan into a BlockJob.
 */
import { type BlockJob, BlockJobSchema } from '../../jobs/block-job.ts';
import { blockBuilds } from '../../jobs/build-refs.ts';
import { rerunBudget } from '../../jobs/clock-hygiene.ts';
import { isTraceProbe } from '../../jobs/compile-spec.ts';
import type { ExperimentRecord, GangPart } from '../../store/experiment-store.ts';

export function buildBlockJob(
  exp: ExperimentRecord,
  block: number,
  attempt: number,
  part: Omit<GangPart, 'job'>,
): BlockJob {
  const planned = exp.plan.blocks.find((b) => b.index === block);
  if (!planned) throw new Error(`experiment ${exp.id} has no block ${block}`);
  const { spec } = exp;
  const after = exp.plan.blocks.filter((b) => b.index > block).length;
  const identity = spec.gates.identity;
  return BlockJobSchema.parse({
    experiment: exp.id,
    spec_hash: exp.hash,
    block,
    attempt,
    epoch: part.epoch,
    host: part.host,
    cards: part.cards,
    world: part.world,
    first_rank: part.first_rank,
    workload: spec.workload,
    arms: exp.plan.arms,
    sequence: planned.sequence,
    gates: {
      identity:
        identity === false
          ? null
          : { replays: identity.replays, ...(identity.toggle === undefined ? {} : { toggle: identity.toggle }) },
      aa: spec.gates.aa,
    },
    warmup: spec.workload.warmup,
    steps: spec.workload.steps,
    foreign_process: spec.foreign_process,
    ...(isTraceProbe(spec) ? { trace_probe: true } : {}),
    ...(after > 0 ? { blocks_after: after } : {}),
    hygiene: spec.hygiene === undefined ? undefined : { policy: spec.hygiene, reruns: rerunBudget(spec) },
    min_free_disk_gb: spec.min_free_disk_gb,
    builds: blockBuilds(spec) ?? undefined,
  });
}
