/**
 * Per arm and rank of a multi-rank experiment (world > 1), from the committed events alone: the
 * identity gate (capture + N replays) on every rank, whether every rank's hashes equal rank 0's
 * (the all-reduce gives every rank the same sums, so any difference is a bug), and the shape of a
 * step on each rank: collectives per step, graph nodes, kernel launches.
 * Hashes are compared line by line: a rank's gate or rep against rank 0's line with the same
 * request id in the same block attempt.
 *
 * A fold (`RankSummaryFold`), as a reader streams the events: a line's hashes wait for rank 0's
 * same line only while rank 0's has not come; once every rank's came, nothing of it is kept.
 */
import type { Gate, Rep } from '../../jobs/graphrt-protocol.ts';
import type { StreamEvent } from '../../jobs/stream-event.ts';

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

/** The lines compared: graphrt's gates and reps (command ranks' lines are not in this table yet). */
type RankLine = Gate | Rep;

const hashesOf = (l: RankLine): string => JSON.stringify(l.type === 'gate' ? [l.eager_hashes, l.graph_hashes] : l.hashes);
const addUnique = (xs: number[], x: number | null | undefined) => {
  if (typeof x === 'number' && !xs.includes(x)) xs.push(x);
};

function check(row: RankRow, hashes: string, rank0: string): void {
  row.compared += 1;
  if (hashes === rank0) row.same_as_rank0 += 1;
}

function rankLine(e: StreamEvent): RankLine | null {
  const l = e.event;
  if (l === null || typeof l !== 'object') return null;
  return (l.type === 'gate' || l.type === 'rep') && !('backend' in l && l.backend === 'command') ? l : null;
}

/** One line (a gate or rep of one request id) across the ranks: rank 0's hashes once seen, the lines waiting for them. */
interface LineAcc {
  rank0: string | null;
  waiting: { row: RankRow; hashes: string }[];
  seen: number;
}

export class RankSummaryFold {
  private readonly rows = new Map<string, RankRow>();
  private multi = false;
  /** line key → its ranks so far; dropped once its world's lines came */
  private readonly lines = new Map<string, LineAcc>();

  add(e: StreamEvent): void {
    if (!e.committed) return;
    const l = rankLine(e);
    if (l === null) return;
    if (l.world > 1) this.multi = true;
    const id = `${l.arm}\u0000${e.rank}`;
    let row = this.rows.get(id);
    if (!row) {
      row = { arm: l.arm, rank: e.rank, gates: 0, gates_passed: 0, reps: 0, modes: [], collectives_per_step: [], nodes: [], launches_per_step: [], same_as_rank0: 0, compared: 0 };
      this.rows.set(id, row);
    }
    if (l.type === 'gate') {
      row.gates += 1;
      if (l.pass) row.gates_passed += 1;
    } else {
      row.reps += 1;
      if (!row.modes.includes(l.mode)) row.modes.push(l.mode);
    }
    addUnique(row.collectives_per_step, l.collectives_per_step);
    addUnique(row.nodes, l.nodes);
    addUnique(row.launches_per_step, l.launches_per_step);
    this.compare(`${e.block}/${e.attempt}/${l.type}/${l.id}`, e.rank, l.world, row, hashesOf(l));
  }

  private compare(key: string, rank: number, world: number, row: RankRow, hashes: string): void {
    let acc = this.lines.get(key);
    if (!acc) {
      acc = { rank0: null, waiting: [], seen: 0 };
      this.lines.set(key, acc);
    }
    acc.seen++;
    if (rank === 0) {
      acc.rank0 = hashes;
      for (const w of [...acc.waiting, { row, hashes }]) check(w.row, w.hashes, hashes);
      acc.waiting = [];
    } else if (acc.rank0 !== null) check(row, hashes, acc.rank0);
    else acc.waiting.push({ row, hashes });
    if (acc.seen >= world && acc.rank0 !== null) this.lines.delete(key);
  }

  /** Per arm and rank; none unless a line of the experiment ran on more than one rank. */
  result(): RankRow[] {
    if (!this.multi) return [];
    return [...this.rows.values()].sort((a, b) => (a.arm === b.arm ? a.rank - b.rank : a.arm < b.arm ? -1 : 1));
  }
}

export function rankSummary(events: Iterable<StreamEvent>): RankRow[] {
  const f = new RankSummaryFold();
  for (const e of events) f.add(e);
  return f.result();
}
