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
 * A fold (`RunTimingFold`): a rep's lines are reduced as they stream in, and the rep to its
 * block's sums once its world's lines came; what is held per block is a few numbers.
 */
import type { RepLine, StreamEvent } from '../../jobs/stream-event.ts';
import { streamMs } from '../../jobs/stream-event.ts';
import { median } from './descriptive.ts';

export interface RunTiming {
  /** ms per step, warm-up included; null: no rep line with step times */
  step_ms: number | null;
  /** ms from a block's start to its first rep; null: no committed block with a start and a rep */
  startup_ms: number | null;
  reps: number;
  blocks: number;
}

/** One rep of the gang, its lines (one per rank) reduced: the first line's step count, the slowest wall time, the gang's steps. */
interface RepAcc {
  lines: number;
  at: number;
  steps: number;
  wall: number | null;
  gang: number[] | null;
}

/** One committed block attempt: its reps being answered, and the sums of those answered. */
interface BlockAcc {
  start: number | null;
  reps: Map<string, RepAcc>;
  ms: number;
  steps: number;
  count: number;
  first: { at: number; ms: number } | null;
}

export class RunTimingFold {
  private readonly blocks = new Map<string, BlockAcc>();

  add(e: StreamEvent): void {
    if (!e.committed) return;
    const key = `${e.block}/${e.attempt}`;
    let b = this.blocks.get(key);
    if (!b) {
      b = { start: null, reps: new Map(), ms: 0, steps: 0, count: 0, first: null };
      this.blocks.set(key, b);
    }
    const l = e.event;
    if (l === null || typeof l !== 'object') return;
    if (l.type === 'worker' && l.event === 'block-start') b.start = streamMs(e.id);
    if (l.type !== 'rep') return;
    const at = streamMs(e.id);
    let rep = b.reps.get(l.id);
    if (!rep) {
      rep = { lines: 1, at, steps: l.warmup + l.steps, wall: wallOf(l), gang: [...l.step_ms] };
      b.reps.set(l.id, rep);
    } else {
      rep.lines++;
      rep.at = Math.max(rep.at, at);
      const w = wallOf(l);
      rep.wall = rep.wall === null || w === null ? null : Math.max(rep.wall, w);
      const n = Math.min(rep.gang!.length, l.step_ms.length);
      rep.gang!.length = n;
      for (let k = 0; k < n; k++) if (l.step_ms[k]! > rep.gang![k]!) rep.gang![k] = l.step_ms[k]!;
    }
    if (rep.lines >= ('world' in l ? l.world : 1)) answer(b, l.id, rep);
  }

  result(): RunTiming {
    let ms = 0;
    let steps = 0;
    let reps = 0;
    const startups: number[] = [];
    for (const b of this.blocks.values()) {
      // reps some rank never answered count with the ranks that did
      for (const [id, rep] of [...b.reps]) answer(b, id, rep);
      ms += b.ms;
      steps += b.steps;
      reps += b.count;
      if (b.start !== null && b.first !== null) startups.push(Math.max(0, b.first.at - b.start - b.first.ms));
    }
    return { step_ms: steps > 0 ? ms / steps : null, startup_ms: startups.length > 0 ? median(startups) : null, reps, blocks: startups.length };
  }
}

/** A rep every rank answered: its time joins the block's. */
function answer(b: BlockAcc, id: string, rep: RepAcc): void {
  b.reps.delete(id);
  const t = repTime(rep);
  if (t === null) return;
  b.ms += t.ms;
  b.steps += t.steps;
  b.count++;
  if (b.first === null || rep.at < b.first.at) b.first = { at: rep.at, ms: t.ms };
}

const wallOf = (l: RepLine): number | null => ('wall_ms' in l ? l.wall_ms : null);

/** One rep of the gang: its time and its count of steps, warm-up included. */
function repTime(rep: RepAcc): { ms: number; steps: number } | null {
  if (rep.steps <= 0) return null;
  if (rep.wall !== null) return { ms: rep.wall, steps: rep.steps };
  const n = rep.gang!.length;
  if (n === 0) return null;
  return { ms: (rep.gang!.reduce((s, x) => s + x, 0) / n) * rep.steps, steps: rep.steps };
}

export function runTiming(events: Iterable<StreamEvent>): RunTiming {
  const f = new RunTimingFold();
  for (const e of events) f.add(e);
  return f.result();
}
