/**
 * A finished run to plan from (`orch plan --power --noise-from`): its plan, its analysis and its
 * reps' and start-ups' timing (from its committed reps and commit records, run-timing.ts), read from its results directory through the reader `orch report --from` uses
 * (results-dir.ts), or from Redis by experiment id through the collector `orch report ID` uses.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { PriorRun } from '../report/power-plan.ts';
import { readResultsDir } from '../report/results-dir.ts';
import { runTiming } from '../stats/run-timing.ts';
import type { PlanLike } from '../stats/types.ts';
import { collectRecords } from './collect-results.ts';
import { analyzeRecords } from './write-results.ts';

/**
 * `ref` as a results directory when it is one's path (or an id under `root`); else null: the
 * caller reads it from Redis. A path that exists but is no results directory is refused here.
 */
export async function priorRunFromDir(ref: string, root: string): Promise<PriorRun | null> {
  const dir = existsSync(ref) ? ref : existsSync(join(root, ref)) ? join(root, ref) : null;
  if (dir === null) return null;
  const r = readResultsDir(dir);
  return {
    source: dir,
    experiment: r.summary.experiment,
    plan: r.summary.plan as unknown as PlanLike,
    analysis: r.summary.analysis,
    timing: runTiming(r.reps(), r.commits),
  };
}

export async function priorRunFromRedis(redis: Redis, prefix: string, id: string): Promise<PriorRun> {
  const c = await collectRecords(redis, prefix, id);
  return {
    source: `redis:${id}`,
    experiment: id,
    plan: c.exp.plan,
    analysis: analyzeRecords(c),
    timing: runTiming(Object.values(c.reps), c.commits),
  };
}
