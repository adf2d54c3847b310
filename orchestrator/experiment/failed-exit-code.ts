/**
 * The exit code of `orch submit` for an experiment that ended failed: a failure the error
 * registry classifies (jobs/error-codes.ts) exits as that code's kind says — a build that
 * failed before any card was leased (store/experiment-builds.ts) is the user's input, 2 —
 * as does a submission the scheduler refused (its reason opens with SUBMIT_UNAUTHORIZED); any
 * other failure exits 1.
 */
import type { Redis } from 'ioredis';
import { exitCodeFor, isErrorCode } from '../../jobs/error-codes.ts';
import { ExperimentBuildStore } from '../../store/experiment-builds.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';

export async function failedExitCode(redis: Redis, prefix: string, id: string): Promise<number> {
  const build = await new ExperimentBuildStore(redis, prefix).failure(id);
  if (build) return isErrorCode(build.code) ? exitCodeFor({ code: build.code }) : 1;
  // a failure the scheduler decided before any block ran names its code first (SUBMIT_UNAUTHORIZED: …)
  const code = /^([A-Z][A-Z0-9_]+): /.exec((await new ExperimentStore(redis, prefix).get(id))?.reason ?? '')?.[1];
  return code !== undefined && isErrorCode(code) ? exitCodeFor({ code }) : 1;
}
