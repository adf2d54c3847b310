/**
 * The exit code of `orch submit` for an experiment that ended failed: a failure the error
 * registry classifies (jobs/error-codes.ts) exits as that code's kind says — a build that
 * failed before any card was leased (store/experiment-builds.ts) is the user's input, 2 —
 * and any other failure exits 1.
 */
import type { Redis } from 'ioredis';
import { exitCodeFor, isErrorCode } from '../../jobs/error-codes.ts';
import { ExperimentBuildStore } from '../../store/experiment-builds.ts';

export async function failedExitCode(redis: Redis, prefix: string, id: string): Promise<number> {
  const build = await new ExperimentBuildStore(redis, prefix).failure(id);
  return build && isErrorCode(build.code) ? exitCodeFor({ code: build.code }) : 1;
}
