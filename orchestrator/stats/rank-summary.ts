/**
 * Per arm and rank of a multi-rank experiment (world > 1), from the committed events alone: the
 * identity gate (capture + N replays) on every rank, whether every rank's hashes equal rank 0's
 * (the all-reduce gives every rank the same sums, so any difference is a bug), and the shape of a
 * step on each rank: collectives per step, graph nodes, kernel launches.
 * Hashes are compared line by line: a rank's gate or rep against rank 0's line with the same
 * request id in the same block attempt.
 */
import type { BusyEvent } from './busy-share.ts';

export interface RankRow {
  arm: string;
  rank: number;
  gates: number;
  gates_passed: number;
  reps: number;
  modes: string[];
  collectives_per_step: number[];
  nodes: number[];
  launches_per_step: number[];
  /** lines (gates and reps) whose hashes equal rank 0's same line, of those compared */
  same_as_rank0: number;
  compared: number;
}

interface Line {
  type?: string;
  id?: string;
  arm?: string;
  pass?: boolean;
  mode?: string;
  world?: number;
  nodes?: number | null;
  collectives_per_step?: number;
  launches_per_step?: number;
  hashes?: string[];
  eager_hashes?: string[];
  graph_hashes?: string[];
}

const hashesOf = (l: Line): string => JSON.stringify(l.type === 'gate' ? [l.eager_hashes, l.graph_hashes] : l.hashes);
const addUnique = (xs: number[], x: number | null | undefined) => {
  if (typeof x === 'number' && !xs.includes(x)) xs.push(x);
};

export function rankSummary(events: readonly BusyEvent[]): RankRow[] {
  const lines = events
    .filter((e) => e.committed && typeof e.rank === 'number')
    .map((e) => ({ e, l: e.event as Line }))
    .filter(({ l }) => (l.type === 'gate' || l.type === 'rep') && typeof l.arm === 'string');
  if (!lines.some(({ l }) => (l.world ?? 1) > 1)) return [];
  const rank0 = new Map<string, string>();
  const key = (e: BusyEvent, l: Line) => `${e.block}/${e.attempt}/${l.type}/${l.id}`;
  for (const { e, l } of lines) if (e.rank === 0) rank0.set(key(e, l), hashesOf(l));
  const rows = new Map<string, RankRow>();
  for (const { e, l } of lines) {
    const rank = e.rank as number;
    const id = `${l.arm}\u0000${rank}`;
    let row = rows.get(id);
    if (!row) {
      row = { arm: l.arm as string, rank, gates: 0, gates_passed: 0, reps: 0, modes: [], collectives_per_step: [], nodes: [], launches_per_step: [], same_as_rank0: 0, compared: 0 };
      rows.set(id, row);
    }
    if (l.type === 'gate') {
      row.gates += 1;
      if (l.pass === true) row.gates_passed += 1;
    } else {
      row.reps += 1;
      if (l.mode && !row.modes.includes(l.mode)) row.modes.push(l.mode);
    }
    addUnique(row.collectives_per_step, l.collectives_per_step);
    addUnique(row.nodes, l.nodes);
    addUnique(row.launches_per_step, l.launches_per_step);
    const theirs = rank0.get(key(e, l));
    if (theirs !== undefined) {
      row.compared += 1;
      if (theirs === hashesOf(l)) row.same_as_rank0 += 1;
    }
  }
  return [...rows.values()].sort((a, b) => (a.arm === b.arm ? a.rank - b.rank : a.arm < b.arm ? -1 : 1));
}
