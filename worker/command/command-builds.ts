/**
 * What a command rank needs before its first rep, per_rep and resident alike: its builds and the
 * preflight. Every build — builds as arms and the checkout's own build of workload.build — was
 * made before the gang's cards were leased (the experiment's build phase,
 * orchestrator/scheduler/build-phase.ts: a block goes only to a host whose build job finished), so
 * here each is a cache hit; the ensure stays as the safety net for a cache entry removed since, or
 * a checkout changed since (its key differs: it is built here, on the leased cards, as before the
 * build phase).
 *
 * A failure that the error registry (jobs/error-codes.ts) does not retry rejects with BullMQ's
 * UnrecoverableError (store/job-error.ts), so no retry is wasted on a build that fails the same
 * way again.
 */
import type { BlockJob } from '../../jobs/block-job.ts';
import { buildsOfArms } from '../../jobs/build-job.ts';
import type { CommandHello } from '../../jobs/command-line.ts';
import { OrchError } from '../../jobs/errors.ts';
import { toJobError } from '../../store/job-error.ts';
import type { EnsuredBuild } from '../builds/build-cache.ts';
import { preflightCommand } from '../preflight/preflight.ts';
import type { RankStart } from '../rank-runner.ts';

export type CommandWorkload = Extract<BlockJob['workload'], { runtime: 'command' }>;

/** Ensures a build: the checkout's own (`name` absent), else the named build of the job's builds. */
export type EnsureBuild = (onEvent: RankStart['onBuild'], name?: string) => Promise<EnsuredBuild>;

export interface CommandBuilds {
  /** the checkout's own build's artifact dir, null without one */
  artifactDir: string | null;
  /** builds as arms: the artifact dir of each build the block's arms name */
  buildDirs: Map<string, string>;
  /** the hello-shaped line's fields about them */
  hello: Pick<CommandHello, 'artifacts' | 'build' | 'builds'>;
}

export interface PrepareOptions {
  buildRoot: string;
  /** preflight's floor of free disk on the build dir, in GB, when the job does not carry one */
  minFreeDiskGb?: number | undefined;
}

export async function prepareCommandBuilds(
  s: RankStart,
  workload: CommandWorkload,
  ensure: EnsureBuild,
  opts: PrepareOptions,
): Promise<CommandBuilds> {
  const { job } = s;
  let build: EnsuredBuild | null = null;
  let artifactDir: string | null = null;
  const buildDirs = new Map<string, string>();
  const builds: NonNullable<CommandHello['builds']> = {};
  try {
    // Arms that name a build run its commit's artifacts; the checkout's own build only when some
    // arm names none — as the build job decides it (jobs/build-job.ts), so the builds it made
    // before the lease are what this finds in the cache.
    const { named, own } = buildsOfArms(job.arms, workload.build !== undefined);
    if (own) {
      build = await ensure(s.onBuild);
      artifactDir = build.dir;
    }
    for (const name of named) {
      const b = await ensure(s.onBuild, name);
      build ??= b;
      buildDirs.set(name, b.dir);
      builds[name] = {
        commit: job.builds!.builds[name]!.commit,
        key: b.key,
        outcome: b.outcome,
        wait_ms: b.wait_ms,
        build_ms: b.build_ms,
      };
    }
    await preflightCommand({
      build,
      buildRoot: opts.buildRoot,
      minFreeDiskGb: job.min_free_disk_gb ?? opts.minFreeDiskGb ?? 1,
    });
  } catch (err) {
    throw toJobError(err, err instanceof OrchError ? `${err.code}: ${err.message}` : undefined);
  }
  return {
    artifactDir,
    buildDirs,
    hello: {
      artifacts: build?.artifacts ?? [],
      build: build
        ? { key: build.key, outcome: build.outcome, wait_ms: build.wait_ms, build_ms: build.build_ms }
        : null,
      ...(buildDirs.size > 0 ? { builds } : {}),
    },
  };
}
