/**
 * How long a prior run's reps and block start-ups took, from its committed records (the reps'
 * answers, jobs/rep-result.ts, and the commit records' timeline, jobs/commit-record.ts; never the
 * event stream), to price a planned run:
 *
 * - per step: a rep's time over its warmup + steps. A command rep's `wall_ms` is its process's
 *   whole life (start-up included; the slowest rank's); a graphrt rep has its steps' times only,
 *   so the mean of the gang's step (per step the slowest rank, as committed) stands for every
 *   step, warm-up too.
 * - start-up: from the attempt's start (the commit record's `started`) to its first rep's answer
 *   (the last rank's `answered_ms`, the same worker's clock), less that rep's own time: the ranks'
 *   start, builds, the identity gates. The median over blocks.
 */
import type { CommitRecord } from '../../jobs/commit-record.ts';
import type { RepResult } from '../../jobs/rep-result.ts';
import { median } from './descriptive.ts';

export interface RunTiming {
  /** ms per step, warm-up included; null: no rep with step times */
  step_ms: number | null;
  /** ms from a block's start to its first rep; null: no committed block with a start and a rep */
  startup_ms: number | null;
  reps: number;
  blocks: number;
}

/** One rep of the gang: its time and its count of steps, warm-up included; null without answers or steps. */
function repTime(r: RepResult): { ms: number; steps: number } | null {
  const lines = (r.answers ?? []).map((a) => a.line);
  const first = lines[0];
  if (first === undefined) return null;
  const steps = first.warmup + first.steps;
  if (steps <= 0) return null;
  const walls = lines.map((l) => ('wall_ms' in l ? l.wall_ms : null));
  if (walls.every((w): w is number => w !== null)) return { ms: Math.max(...walls), steps };
  const n = r.step_ms.length;
  if (n === 0) return null;
  return { ms: (r.step_ms.reduce((s, x) => s + x, 0) / n) * steps, steps };
}

export function runTiming(reps: Iterable<RepResult>, commits: Readonly<Record<string, CommitRecord>>): RunTiming {
  let ms = 0;
  let steps = 0;
  let count = 0;
  const first = new Map<number, { at: number; ms: number }>();
  for (const r of reps) {
    const commit = commits[String(r.block)];
    if (commit === undefined || commit.attempt !== r.attempt) continue;
    const t = repTime(r);
    if (t === null) continue;
    ms += t.ms;
    steps += t.steps;
    count++;
    const at = Math.max(...(r.answers ?? []).map((a) => a.answered_ms));
    const f = first.get(r.block);
    if (f === undefined || at < f.at) first.set(r.block, { at, ms: t.ms });
  }
  const startups: number[] = [];
  for (const [block, f] of first) {
    const started = commits[String(block)]?.started;
    if (started !== undefined) startups.push(Math.max(0, f.at - started - f.ms));
  }
  return {
    step_ms: steps > 0 ? ms / steps : null,
    startup_ms: startups.length > 0 ? median(startups) : null,
    reps: count,
    blocks: startups.length,
  };
}
