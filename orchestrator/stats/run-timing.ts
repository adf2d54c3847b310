/**
 * How long a prior run's reps and block start-ups took, from its event stream (committed
 * attempts only), to price a planned run:
 *
 * - per step: a rep's time over its warmup + steps. A command rep's `wall_ms` is its process's
 *   whole life (start-up included); a graphrt rep has its steps' times only, so the mean of the
 *   gang's step (per step the slowest rank, as committed) stands for every step, warm-up too.
 * - start-up: from the attempt's `block-start` worker event to its first rep's answer (stream
 *   ids: the Redis server's clock), less that rep's own time: the ranks' start, builds, the
 *   identity gates. The median over blocks.
 */
import { median } from './descriptive.ts';
import type { BusyEvent } from './busy-share.ts';

export interface RunTiming {
  /** ms per step, warm-up included; null: no rep line with step times */
  step_ms: number | null;
  /** ms from a block's start to its first rep; null: no committed block with a start and a rep */
  startup_ms: number | null;
  reps: number;
  blocks: number;
}

interface RepLine {
  type: 'rep';
  id: string;
  step_ms: number[];
  warmup?: number;
  steps?: number;
  wall_ms?: number;
}

const streamMs = (id: string) => Number(id.split('-')[0]);

function repLine(e: unknown): RepLine | null {
  const r = e as Partial<RepLine> | null;
  return typeof r === 'object' && r !== null && r.type === 'rep' && Array.isArray(r.step_ms) && typeof r.id === 'string' ? (r as RepLine) : null;
}

const isBlockStart = (e: unknown) => typeof e === 'object' && e !== null && (e as { type?: unknown }).type === 'worker' && (e as { event?: unknown }).event === 'block-start';

/** One rep of the gang (its lines, one per rank): its time and its count of steps, warm-up included. */
function repTime(lines: RepLine[]): { ms: number; steps: number } | null {
  const first = lines[0]!;
  const steps = (first.warmup ?? 0) + (first.steps ?? first.step_ms.length);
  if (steps <= 0) return null;
  if (lines.every((l) => typeof l.wall_ms === 'number')) return { ms: Math.max(...lines.map((l) => l.wall_ms!)), steps };
  const n = Math.min(...lines.map((l) => l.step_ms.length));
  if (n === 0) return null;
  let sum = 0;
  for (let k = 0; k < n; k++) sum += Math.max(...lines.map((l) => l.step_ms[k]!));
  return { ms: (sum / n) * steps, steps };
}

export function runTiming(events: readonly BusyEvent[]): RunTiming {
  const blocks = new Map<string, { start: number | null; reps: Map<string, { at: number; lines: RepLine[] }> }>();
  for (const e of events) {
    if (!e.committed) continue;
    const key = `${e.block}/${e.attempt}`;
    const b = blocks.get(key) ?? { start: null, reps: new Map() };
    blocks.set(key, b);
    if (isBlockStart(e.event)) b.start = streamMs(e.id);
    const line = repLine(e.event);
    if (line === null) continue;
    const rep = b.reps.get(line.id) ?? { at: streamMs(e.id), lines: [] };
    rep.at = Math.max(rep.at, streamMs(e.id));
    rep.lines.push(line);
    b.reps.set(line.id, rep);
  }
  let ms = 0;
  let steps = 0;
  let reps = 0;
  const startups: number[] = [];
  for (const b of blocks.values()) {
    let first: { at: number; ms: number } | null = null;
    for (const rep of b.reps.values()) {
      const t = repTime(rep.lines);
      if (t === null) continue;
      ms += t.ms;
      steps += t.steps;
      reps++;
      if (first === null || rep.at < first.at) first = { at: rep.at, ms: t.ms };
    }
    if (b.start !== null && first !== null) startups.push(Math.max(0, first.at - b.start - first.ms));
  }
  return { step_ms: steps > 0 ? ms / steps : null, startup_ms: startups.length > 0 ? median(startups) : null, reps, blocks: startups.length };
}
