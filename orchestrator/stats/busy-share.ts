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
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { median } from './descriptive.ts';

/** One events.jsonl record (orchestrator/results/collect-results.ts `StreamEvent`), as much as is read here. */
export interface BusyEvent {
  id: string;
  block: number;
  attempt: number;
  rank: number | string;
  committed: boolean;
  event: unknown;
}

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

interface RepSpan {
  id: string;
  step_ms: number[];
  warmup_ms?: number[];
  /** graph reps: the settling eager step (native/PROTOCOL.md), card time as a warm-up step is */
  settle_ms?: number | null;
  t_start_ns?: number;
  t_end_ns?: number;
}

const streamMs = (id: string) => Number(id.split('-')[0]);

/** Nearest-rank quantile (q in [0, 1]) of a non-empty sample. */
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] as number;
}

function isRep(e: unknown): e is RepSpan & { type: 'rep' } {
  return typeof e === 'object' && e !== null && (e as { type?: unknown }).type === 'rep' && Array.isArray((e as RepSpan).step_ms);
}

function lineType(e: unknown): string | null {
  if (typeof e !== 'object' || e === null) return null;
  const t = (e as { type?: unknown }).type;
  return typeof t === 'string' ? t : null;
}

/** A rep line's unmeasured steps: its warm-up steps and, on a graph rep, the settling eager step. */
function warmupSteps(l: RepSpan): number[] {
  return typeof l.settle_ms === 'number' ? [...(l.warmup_ms as number[]), l.settle_ms] : (l.warmup_ms as number[]);
}

/** Σ over steps of the slowest rank's time (the gang's step), over the steps every rank has. */
function gangSum(perRank: readonly (readonly number[])[]): number {
  const steps = Math.min(...perRank.map((s) => s.length));
  let sum = 0;
  for (let k = 0; k < steps; k++) sum += Math.max(...perRank.map((s) => s[k] as number));
  return sum;
}

function workerEvent(e: unknown): string | null {
  if (typeof e !== 'object' || e === null || (e as { type?: unknown }).type !== 'worker') return null;
  const ev = (e as { event?: unknown }).event;
  return typeof ev === 'string' ? ev : null;
}

/** One row per committed block attempt that has both its start and its commit event, by block. */
export function busyShare(events: readonly BusyEvent[]): BusyShareRow[] {
  const byBlock = new Map<number, BusyEvent[]>();
  for (const e of events) {
    if (!e.committed) continue;
    const list = byBlock.get(e.block) ?? [];
    list.push(e);
    byBlock.set(e.block, list);
  }
  const rows: BusyShareRow[] = [];
  for (const [block, evs] of [...byBlock].sort((a, b) => a[0] - b[0])) {
    const start = evs.find((e) => workerEvent(e.event) === 'block-start');
    const end = evs.find((e) => workerEvent(e.event) === 'block-committed');
    if (!start || !end) continue;
    const leased = Math.max(streamMs(end.id) - streamMs(start.id), 0);
    // one rep = the lines of one request id, one per rank
    const reps = new Map<string, RepSpan[]>();
    for (const e of evs) {
      if (!isRep(e.event)) continue;
      const list = reps.get(e.event.id) ?? [];
      list.push(e.event);
      reps.set(e.event.id, list);
    }
    let stepSum = 0;
    let warmSum: number | null = 0;
    const spans: { start: number; end: number }[] = [];
    let timed = true;
    for (const lines of reps.values()) {
      stepSum += gangSum(lines.map((l) => l.step_ms));
      if (warmSum !== null && lines.every((l) => Array.isArray(l.warmup_ms))) warmSum += gangSum(lines.map(warmupSteps));
      else warmSum = null;
      if (lines.some((l) => l.t_start_ns === undefined || l.t_end_ns === undefined)) timed = false;
      else spans.push({ start: Math.min(...lines.map((l) => l.t_start_ns as number)), end: Math.max(...lines.map((l) => l.t_end_ns as number)) });
    }
    spans.sort((a, b) => a.start - b.start);
    const repMs = timed ? spans.reduce((s, x) => s + (x.end - x.start) / 1e6, 0) : null;
    const gaps = timed ? spans.slice(1).map((x, i) => (x.start - (spans[i] as { end: number }).end) / 1e6) : [];
    const lastOf = (type: string) => Math.max(-Infinity, ...evs.filter((e) => lineType(e.event) === type).map((e) => streamMs(e.id)));
    const hello = lastOf('hello');
    const gate = lastOf('gate');
    const ready = Number.isFinite(hello) ? Math.max(hello - streamMs(start.id), 0) : null;
    const gatesMs = ready === null ? null : Number.isFinite(gate) ? Math.max(gate - hello, 0) : 0;
    rows.push({
      block,
      attempt: start.attempt,
      reps: reps.size,
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
  return rows;
}

/** The rows of a results directory (its events.jsonl, as orchestrator/results/write-results.ts writes it). */
export function busyShareOfDir(dir: string): BusyShareRow[] {
  const text = readFileSync(join(dir, 'events.jsonl'), 'utf8');
  return busyShare(text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as BusyEvent));
}
