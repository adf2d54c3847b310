/**
 * Card busy share: how much of the time a block held its cards was spent measuring.
 *
 * Definitions, per committed block attempt (only the committed attempt's events count):
 * - leased: from the attempt's `block-start` worker event to its `block-committed` event, read
 *   from their stream entry ids (the Redis server's clock, ms; one clock for both ends). It covers
 *   the ranks' start, the identity gates, the reps, the guard checks and the commit; it misses
 *   the grant→pickup delay before and the ranks' exit and lease release after.
 * - step share: Σ over the block's reps of Σ measured `step_ms` (the gang's: per step the slowest
 *   rank, as committed) / leased. The share of card time that became a number. Warm-up steps are
 *   not in it: this is the "measured steps" share.
 * - busy share: (Σ measured steps + Σ warm-up steps) / leased, the warm-up steps' times from the
 *   rep lines' `warmup_ms` and `settle_ms` (the gang's: per step the slowest rank). The "warm-up +
 *   measured steps" share. Null when a rep line lacks `warmup_ms` (a graphrt older than the field).
 * - rep share: Σ over reps of the rep's gang span (latest rank `t_end_ns` − earliest rank
 *   `t_start_ns`: capture, warm-up and measured steps, on the ranks' CLOCK_MONOTONIC) / leased.
 *   The share of card time a rank was serving a rep at all.
 * - gap: between two consecutive reps of the block, the earliest rank's start of the next minus
 *   the latest rank's end of the previous. With the next request queued behind the rep (the
 *   worker's one-deep pipeline, worker/block-executor.ts) it is graphrt's alone: the answer
 *   written, the next line read and parsed. Sent one at a time it also holds the worker's
 *   turnaround: rep line parsed, results and events handled, the look started, next request
 *   written. p50 and p99 over the block's gaps.
 * - start-up, on the same Redis clock as leased (stream entry ids; a rank's line is appended as the
 *   worker reads it): ranks ready = the last rank's `hello` − block-start (the worker's look for
 *   foreign processes, process start, backend and context); gates = the last `gate` line − ranks
 *   ready (every identity gate, sent one after another); start-up = ranks ready + gates, the card
 *   time before the first rep could start. Null when the block has no hello lines (a command
 *   workload).
 * A rep line without t_start_ns/t_end_ns (a graphrt older than the field) leaves rep share and
 * gaps null; step share needs only step_ms.
 *
 * A fold (`BusyShareFold`): events are added one at a time, as a reader streams them; a rep's
 * lines are reduced as they come (the gang's step: per step the slowest rank so far) and the rep
 * to its sums once its world's lines came; a block's state is reduced to its row at its
 * `block-committed`. What is held is the reps being answered and each block's spans, never the
 * events.
 */
import { streamMs, type RepLine, type StreamEvent } from '../../jobs/stream-event.ts';
import { median } from './descriptive.ts';

export interface BusyShareRow {
  block: number;
  attempt: number;
  reps: number;
  leased_ms: number;
  step_ms: number;
  /** Σ warm-up steps (null: a rep line without warmup_ms) */
  warmup_ms: number | null;
  rep_ms: number | null;
  /** measured steps / leased */
  step_share: number;
  /** (warm-up + measured steps) / leased */
  busy_share: number | null;
  rep_share: number | null;
  /** block-start → the last rank's hello (Redis clock) */
  ready_ms: number | null;
  /** the last hello → the last gate line (0 without gates) */
  gates_ms: number | null;
  /** ranks ready + gates */
  startup_ms: number | null;
  gap_p50_ms: number | null;
  gap_p99_ms: number | null;
}

/** Nearest-rank quantile (q in [0, 1]) of a non-empty sample. */
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] as number;
}

/** A rep line's unmeasured steps: its warm-up steps and, on a graph rep, the settling eager step; null without warmup_ms. */
function warmupSteps(l: RepLine): number[] | null {
  if (!('warmup_ms' in l) || l.warmup_ms === undefined) return null;
  return 'settle_ms' in l && typeof l.settle_ms === 'number' ? [...l.warmup_ms, l.settle_ms] : l.warmup_ms;
}

/** Per step the slowest rank's time so far, over the steps every rank so far has: the gang's steps. */
function gangMax(acc: number[] | null, steps: readonly number[]): number[] {
  if (acc === null) return [...steps];
  const n = Math.min(acc.length, steps.length);
  acc.length = n;
  for (let k = 0; k < n; k++) if (steps[k]! > acc[k]!) acc[k] = steps[k]!;
  return acc;
}

const sum = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0);

/** One rep of the gang, its ranks' lines reduced as they arrive. */
interface RepAcc {
  lines: number;
  steps: number[] | null;
  /** null once a line lacked warmup_ms */
  warm: number[] | null;
  warmKnown: boolean;
  start: number;
  end: number;
  timed: boolean;
}

/** One committed block attempt in flight: its reps being answered, and the sums of those answered. */
interface BlockAcc {
  attempt: number;
  start: string | null;
  reps: Map<string, RepAcc>;
  /** reps reduced */
  answered: number;
  stepSum: number;
  /** null once a rep lacked warm-up times */
  warmSum: number | null;
  timed: boolean;
  spans: { start: number; end: number }[];
  hello: number;
  gate: number;
}

export class BusyShareFold {
  private readonly blocks = new Map<number, BlockAcc>();
  private readonly done: BusyShareRow[] = [];
  /** blocks whose row is made: the first start/commit pair counts, as the stream holds them */
  private readonly closed = new Set<number>();

  add(e: StreamEvent): void {
    if (!e.committed || this.closed.has(e.block)) return;
    let b = this.blocks.get(e.block);
    if (!b) {
      b = { attempt: e.attempt, start: null, reps: new Map(), answered: 0, stepSum: 0, warmSum: 0, timed: true, spans: [], hello: -Infinity, gate: -Infinity };
      this.blocks.set(e.block, b);
    }
    const body = e.event;
    if (body === null || typeof body !== 'object') return;
    if (body.type === 'worker') {
      if (body.event === 'block-start' && b.start === null) b.start = e.id;
      else if (body.event === 'block-committed' && b.start !== null) this.close(e.block, b, e.id);
      return;
    }
    if (body.type === 'hello') b.hello = Math.max(b.hello, streamMs(e.id));
    else if (body.type === 'gate') b.gate = Math.max(b.gate, streamMs(e.id));
    else if (body.type === 'rep') this.addRep(b, body);
  }

  private addRep(b: BlockAcc, l: RepLine): void {
    // one rep = the lines of one request id, one per rank
    let r = b.reps.get(l.id);
    if (!r) {
      r = { lines: 0, steps: null, warm: null, warmKnown: true, start: Infinity, end: -Infinity, timed: true };
      b.reps.set(l.id, r);
    }
    r.lines++;
    r.steps = gangMax(r.steps, l.step_ms);
    const w = warmupSteps(l);
    if (w === null) r.warmKnown = false;
    else if (r.warmKnown) r.warm = gangMax(r.warm, w);
    const t0 = 't_start_ns' in l ? l.t_start_ns : undefined;
    const t1 = 't_end_ns' in l ? l.t_end_ns : undefined;
    if (t0 === undefined || t1 === undefined) r.timed = false;
    else {
      r.start = Math.min(r.start, t0);
      r.end = Math.max(r.end, t1);
    }
    if (r.lines >= ('world' in l ? l.world : 1)) this.answer(b, l.id, r);
  }

  /** A rep every rank answered: its sums join the block's. */
  private answer(b: BlockAcc, id: string, r: RepAcc): void {
    b.reps.delete(id);
    b.answered++;
    b.stepSum += sum(r.steps ?? []);
    b.warmSum = b.warmSum !== null && r.warmKnown ? b.warmSum + sum(r.warm ?? []) : null;
    if (!r.timed) b.timed = false;
    else b.spans.push({ start: r.start, end: r.end });
  }

  private close(block: number, b: BlockAcc, endId: string): void {
    this.blocks.delete(block);
    this.closed.add(block);
    const leased = Math.max(streamMs(endId) - streamMs(b.start!), 0);
    // reps some rank never answered count with the ranks that did
    for (const [id, r] of [...b.reps]) this.answer(b, id, r);
    const { stepSum, warmSum, timed, spans } = b;
    spans.sort((x, y) => x.start - y.start);
    const repMs = timed ? spans.reduce((s, x) => s + (x.end - x.start) / 1e6, 0) : null;
    const gaps = timed ? spans.slice(1).map((x, i) => (x.start - spans[i]!.end) / 1e6) : [];
    const ready = Number.isFinite(b.hello) ? Math.max(b.hello - streamMs(b.start!), 0) : null;
    const gatesMs = ready === null ? null : Number.isFinite(b.gate) ? Math.max(b.gate - b.hello, 0) : 0;
    this.done.push({
      block,
      attempt: b.attempt,
      reps: b.answered,
      leased_ms: leased,
      step_ms: stepSum,
      warmup_ms: warmSum,
      rep_ms: repMs,
      step_share: leased > 0 ? stepSum / leased : 0,
      busy_share: warmSum === null ? null : leased > 0 ? (stepSum + warmSum) / leased : 0,
      rep_share: repMs === null ? null : leased > 0 ? repMs / leased : 0,
      ready_ms: ready,
      gates_ms: gatesMs,
      startup_ms: ready === null || gatesMs === null ? null : ready + gatesMs,
      gap_p50_ms: gaps.length > 0 ? median(gaps) : null,
      gap_p99_ms: gaps.length > 0 ? quantile(gaps, 0.99) : null,
    });
  }

  /** One row per committed block attempt that has both its start and its commit event, by block. */
  rows(): BusyShareRow[] {
    return [...this.done].sort((a, b) => a.block - b.block);
  }
}

export function busyShare(events: Iterable<StreamEvent>): BusyShareRow[] {
  const f = new BusyShareFold();
  for (const e of events) f.add(e);
  return f.rows();
}
