/**
 * A planned rep's identity, written once: its block, its arm, its 0-based occurrence of that arm
 * in the block (`rep`), and its index in the block's sequence (`position`). The scheduler, the
 * statistics and the results all plan, key and name reps through this file, and every record
 * of a rep at rest (jobs/rep-result.ts, jobs/failed-rep.ts) carries these fields, so nothing
 * parses an identity back out of a hash field.
 */
import { z } from 'zod';
import { type BlockJob, sequenceReps } from './block-job.ts';

const count = z.int().min(0);

export const RepRefSchema = z.object({
  block: count,
  arm: z.string(),
  /** 0-based occurrence of `arm` in the block's sequence. */
  rep: count,
  /** Index in the block's sequence. */
  position: count,
});
export type RepRef = z.infer<typeof RepRefSchema>;

/**
 * `<block>/<arm>/<rep>`: the field of a rep in the results and failed hashes, and the rep's name
 * in messages. `position` is left out: block, arm and rep already name one rep.
 */
export function repKey(ref: Pick<RepRef, 'block' | 'arm' | 'rep'>): string {
  return `${ref.block}/${ref.arm}/${ref.rep}`;
}

/** The part of a plan reps are planned from (jobs/plan.ts `Plan` is assignable to it). */
export interface PlanBlocks {
  blocks: readonly { index: number; sequence: readonly string[] }[];
}

/** Every planned rep of one block, in run order; none for a block the plan does not have. */
export function plannedReps(plan: PlanBlocks, block: number): RepRef[] {
  const planned = plan.blocks.find((b) => b.index === block);
  return planned ? blockReps(block, planned.sequence) : [];
}

/** The reps of one block's sequence, in run order (what a block job carries: its block and sequence). */
export function blockReps(block: number, sequence: readonly string[]): RepRef[] {
  return sequenceReps(sequence).map((r) => ({ block, ...r }));
}

/** Every planned rep of the plan, block by block. */
export function allPlannedReps(plan: PlanBlocks): RepRef[] {
  return plan.blocks.flatMap((b) => plannedReps(plan, b.index));
}

/**
 * The fields every record of a measured rep opens with (jobs/rep-result.ts): the attempt that
 * measured it, from its block job, and the planned rep it answers.
 */
export function repResultFields(
  job: Pick<BlockJob, 'experiment' | 'block' | 'attempt' | 'epoch'>,
  p: Pick<RepRef, 'arm' | 'rep' | 'position'>,
) {
  return {
    experiment: job.experiment,
    block: job.block,
    attempt: job.attempt,
    epoch: job.epoch,
    arm: p.arm,
    rep: p.rep,
    position: p.position,
  };
}
