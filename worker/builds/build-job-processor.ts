/**
 * The processor of a build job (jobs/build-job.ts) on the host's build queue: the payload
 * checked, every build of the experiment made into the host's cache (ensure-experiment-builds.ts),
 * each build's progress on the experiment's stream as the rank path reports it — build-start,
 * build-wait (its place in line for the host build lock), build-end (ms, cached or built) — on
 * the host's worker track, with block -1: no block and no card are involved yet. Then, when the job
 * names cards to `prepare`, the first blocks' ranks start in the host phase on them
 * (worker/command/prepare-first.ts), and the job ends once they have prepared.
 */
import type { Logger } from 'pino';
import { type BuildJob, BuildJobSchema } from '../../jobs/build-job.ts';
import { OrchError } from '../../jobs/errors.ts';
import { describeIssues } from '../../jobs/schema-issues.ts';
import type { FirstPrepared } from '../command/prepare-first.ts';
import type { EventStream } from '../event-stream.ts';
import type { BuildCache } from './build-cache.ts';
import { type BuiltForExperiment, ensureExperimentBuilds } from './ensure-experiment-builds.ts';

export interface BuildJobContext {
  host: string;
  cache: BuildCache;
  events: (experiment: string) => EventStream;
  log: Logger;
  /** the job's `prepare` cards: their first blocks' ranks started in the host phase (worker/command/prepare-first.ts) */
  prepareFirst?: (job: BuildJob) => Promise<FirstPrepared[]>;
}

export async function runBuildJob(
  data: unknown,
  ctx: BuildJobContext,
): Promise<{ host: string; builds: BuiltForExperiment[]; prepared?: FirstPrepared[] }> {
  const parsed = BuildJobSchema.safeParse(data);
  if (!parsed.success)
    throw new OrchError('BUILD_JOB_INVALID', `build job payload: ${describeIssues(parsed.error, 'job')}`);
  const job = parsed.data;
  if (job.host !== ctx.host)
    throw new OrchError('BLOCK_WRONG_HOST', `a build job for host ${job.host} reached the worker of host ${ctx.host}`);
  const stream = ctx.events(job.experiment);
  const tags = { block: -1, attempt: job.attempt, epoch: 0, host: ctx.host, card: '', rank: '' as const };
  const log = ctx.log.child({ experiment: job.experiment, build_attempt: job.attempt });
  log.info(
    { builds: Object.keys(job.builds?.builds ?? {}), own: job.own },
    'building the experiment before any card is leased to it',
  );
  try {
    const builds = await ensureExperimentBuilds(ctx.cache, job, ({ event, ...fields }) =>
      stream.worker(tags, event, fields as never),
    );
    log.info(
      { builds: builds.map((b) => ({ name: b.name, outcome: b.outcome, build_ms: b.build_ms })) },
      'experiment builds ready',
    );
    if ((job.prepare ?? []).length === 0) return { host: ctx.host, builds };
    if (ctx.prepareFirst === undefined)
      throw new OrchError(
        'BUILD_JOB_INVALID',
        `build job of ${job.experiment}: this worker runs no resident command ranks`,
      );
    const prepared = await ctx.prepareFirst(job);
    for (const p of prepared) stream.worker(tags, 'host-prepared', p);
    log.info({ prepared }, "the first blocks' ranks prepared in the host phase, before any lease");
    return { host: ctx.host, builds, prepared };
  } finally {
    await stream.flush();
  }
}
