/**
 * Card busy share: how much of the time a block held its cards was spent measuring.
 *
 * Definitions, per committed block attempt (only the committed attempt's events count):
 * - leased: from the attempt's `block-start` worker event to its `block-committed` event, read
 *   from their stream entry ids (the Redis server's clock, ms; one clock for both ends). It covers
 *   the ranks' start, the identity gates, the reps, the guard checks and the commit; it misses
 *   the grant→pickup delay before and the ranks' exit and lease release after.
 * - step share: Σ over the block's reps of Σ measured `step_ms` (the gang's: per step the slowest
 *   rank, as committed) / leased. The share of card time that became a number.
 * - rep share: Σ over reps of the rep's gang span (latest rank `t_end_ns` − earliest rank
 *   `t_start_ns`: capture, warm-up and measured steps, on the ranks' CLOCK_MONOTONIC) / leased.
 *   The share of card time a rank was serving a rep at all.
 * - gap: between two consecutive reps of the block, the earliest rank's start of the next minus
 *   the latest rank's end of the previous (the worker's turnaround: rep line parsed, results and
 *   events handled, guard, next request written and read). p50 and p99 over the block's gaps.
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
  rep_ms: number | null;
  step_share: number;
  rep_share: number | null;
  gap_p50_ms: number | null;
  gap_p99_ms: number | null;
}

interface RepSpan {
  id: string;
  step_ms: number[];
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
    const spans: { start: number; end: number }[] = [];
    let timed = true;
    for (const lines of reps.values()) {
      const steps = Math.min(...lines.map((l) => l.step_ms.length));
      for (let k = 0; k < steps; k++) stepSum += Math.max(...lines.map((l) => l.step_ms[k] as number));
      if (lines.some((l) => l.t_start_ns === undefined || l.t_end_ns === undefined)) timed = false;
      else spans.push({ start: Math.min(...lines.map((l) => l.t_start_ns as number)), end: Math.max(...lines.map((l) => l.t_end_ns as number)) });
    }
    spans.sort((a, b) => a.start - b.start);
    const repMs = timed ? spans.reduce((s, x) => s + (x.end - x.start) / 1e6, 0) : null;
    const gaps = timed ? spans.slice(1).map((x, i) => (x.start - (spans[i] as { end: number }).end) / 1e6) : [];
    rows.push({
      block,
      attempt: start.attempt,
      reps: reps.size,
      leased_ms: leased,
      step_ms: stepSum,
      rep_ms: repMs,
      step_share: leased > 0 ? stepSum / leased : 0,
      rep_share: repMs === null ? null : leased > 0 ? repMs / leased : 0,
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
