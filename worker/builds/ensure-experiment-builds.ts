/**
 * The host's side of an experiment's build phase: every build its blocks will run here, made
 * into the host's build cache before the scheduler leases a card of this host to the
 * experiment (orchestrator/scheduler/build-phase.ts). A command workload's builds are the
 * user's recipe in a worktree of each commit (commit-build.ts), plus the recipe in the
 * checkout of workload.build.dir when an arm names no build (a spec without `builds:` has only
 * that one); a native workload's are graphrt of each commit (graphrt-build.ts).
 *
 * One build at a time, in the order of the spec: the host build lock serializes them anyway,
 * and the first failure ends the job with the error that names the build (its ref, its commit,
 * the command and the log's last lines): the later builds would not make the experiment run.
 */
import type { BuildJob } from '../../jobs/build-job.ts';
import type { BuildCache, BuildRequest, EnsuredBuild } from './build-cache.ts';
import { ensureCommitBuild } from './commit-build.ts';
import { ensureGraphrtBuild } from './graphrt-build.ts';

export interface BuiltForExperiment {
  /** the build's name in the spec, or '' for the workload's own build */
  name: string;
  commit: string | null;
  key: string;
  outcome: EnsuredBuild['outcome'];
  wait_ms: number;
  build_ms: number | null;
}

export async function ensureExperimentBuilds(
  cache: BuildCache,
  job: Pick<BuildJob, 'experiment' | 'workload' | 'builds' | 'own'>,
  onEvent?: BuildRequest['onEvent'],
): Promise<BuiltForExperiment[]> {
  const out: BuiltForExperiment[] = [];
  const seen = (name: string, commit: string | null, b: EnsuredBuild) =>
    out.push({ name, commit, key: b.key, outcome: b.outcome, wait_ms: b.wait_ms, build_ms: b.build_ms });
  const common = { experiment: job.experiment, ...(onEvent ? { onEvent } : {}) };
  const w = job.workload;
  // The checkout's build exactly as the rank path asks for it (command-rank-runner.ts): no
  // baseDir, so workload.build.dir resolves on this worker (`~` its user's home, a relative dir
  // against its cwd) and the key (commit, dirty diff) is of that checkout as it is now; the
  // rank's ensure then computes the same key and finds it in the cache.
  if (w.runtime === 'command' && w.build && job.own) seen('', null, await cache.ensure({ build: w.build, ...common }));
  const repo = job.builds?.repo ?? '';
  for (const [name, { commit, ref }] of Object.entries(job.builds?.builds ?? {})) {
    const req = { name, ref, commit, repo, ...common };
    if (w.runtime === 'native') seen(name, commit, await ensureGraphrtBuild(cache, req));
    else if (w.build) seen(name, commit, await ensureCommitBuild(cache, { ...req, build: w.build }));
  }
  return out;
}
