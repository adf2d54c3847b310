/**
 * The payload of one build job on queue `build-<host>` (store/keys.ts hostBuildQueue): every
 * build an experiment's blocks will run on that host — the commits its arms name and the
 * checkout's own build (`workload.build`) — made before any card is leased to it
 * (orchestrator/scheduler/build-phase.ts; the worker's side is
 * worker/builds/ensure-experiment-builds.ts). Signed like a block job (jobs/grant.ts), `epoch`
 * being the build attempt: the worker runs the user's build command only for a payload the
 * scheduler made.
 */
import { z } from 'zod';
import { BlockJobSchema } from './block-job.ts';

const block = BlockJobSchema.shape;

/** The host-phase processes one build job starts at most (a card may be named twice: its own slot and its spare). */
export const MAX_PREPARE_PER_HOST = 64;

export const BuildJobSchema = z.object({
  experiment: block.experiment,
  host: block.host,
  /** 1 for the first build job of this host; a transient failure is tried again as attempt + 1 */
  attempt: z.int().min(1),
  /** = attempt: what the grant signs (jobs/grant.ts needs an integer epoch) */
  epoch: z.int().min(1),
  workload: block.workload,
  /** the builds the plan's arms name (jobs/build-refs.ts blockBuilds); absent when the spec has no `builds:` */
  builds: block.builds,
  /** an arm names no build: the workload's own build (of the checkout in workload.build.dir) is needed too */
  own: z.boolean(),
  /**
   * cards of this host whose first blocks' ranks start in the host phase once the builds are
   * made (orchestrator/scheduler/build-phase.ts preparesBeforeLease); the job ends when they
   * have prepared (worker/command/prepare-first.ts)
   */
  prepare: z.array(block.cards.element).max(MAX_PREPARE_PER_HOST).optional(),
});
export type BuildJob = z.infer<typeof BuildJobSchema>;

/**
 * What the blocks of these arms build: each build an arm names, and the workload's own build
 * when some arm names none. The rank runner and the build job decide it the same way, so the
 * rank's build is the build job's, found in the cache.
 */
export function buildsOfArms(
  arms: readonly { build?: string | undefined }[],
  hasRecipe: boolean,
): { named: string[]; own: boolean } {
  return {
    named: [...new Set(arms.flatMap((a) => (a.build === undefined ? [] : [a.build])))],
    own: hasRecipe && arms.some((a) => a.build === undefined),
  };
}
