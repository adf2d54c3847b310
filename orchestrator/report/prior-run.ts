/**
 * A finished run to plan from (`orch plan --power --noise-from`): its plan, its analysis and its
 * events, read from its results directory through the reader `orch report --from` uses
 * (results-dir.ts), or from Redis by experiment id through the collector `orch report ID` uses.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { analyzeCollected } from '../results/write-results.ts';
import { collectResults } from '../results/collect-results.ts';
import type { BusyEvent } from '../stats/busy-share.ts';
import type { Analysis, PlanLike } from '../stats/types.ts';
import { readResultsDir } from './results-dir.ts';

export interface PriorRun {
  /** the directory, or `redis:<id>` */
  source: string;
  experiment: string;
  plan: PlanLike;
  analysis: Analysis;
  events: BusyEvent[];
}

/**
 * `ref` as a results directory when it is one's path (or an id under `root`); else null: the
 * caller reads it from Redis. A path that exists but is no results directory is refused here.
 */
export function priorRunFromDir(ref: string, root: string): PriorRun | null {
  const dir = existsSync(ref) ? ref : existsSync(join(root, ref)) ? join(root, ref) : null;
  if (dir === null) return null;
  const r = readResultsDir(dir);
  return { source: dir, experiment: r.summary.experiment, plan: r.summary.plan as unknown as PlanLike, analysis: r.summary.analysis, events: r.events };
}

export async function priorRunFromRedis(redis: Redis, prefix: string, id: string): Promise<PriorRun> {
  const c = await collectResults(redis, prefix, id);
  return { source: `redis:${id}`, experiment: id, plan: c.exp.plan, analysis: analyzeCollected(c), events: c.events };
}
