/**
 * Per arm and rank of a multi-rank experiment (world > 1), from the committed records alone (the
 * reps' per-rank answers, jobs/rep-result.ts; the gates' per-rank detail, jobs/gate-result.ts):
 * the identity gate (capture + N replays) on every rank, whether every rank's hashes equal rank
 * 0's (the all-reduce gives every rank the same sums, so any difference is a bug), and the shape
 * of a step on each rank: collectives per step, graph nodes, kernel launches.
 * Hashes are compared record by record: a rank's gate or rep against rank 0's in the same record.
 * graphrt ranks only (a command rank's identity is its gate's, per rank, in the Gates section).
 */
import type { GateResult } from '../../jobs/gate-result.ts';
import type { RepResult } from '../../jobs/rep-result.ts';

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

const addUnique = (xs: number[], x: number | null | undefined) => {
  if (typeof x === 'number' && !xs.includes(x)) xs.push(x);
};

function check(row: RankRow, hashes: string, rank0: string | undefined): void {
  if (rank0 === undefined) return;
  row.compared += 1;
  if (hashes === rank0) row.same_as_rank0 += 1;
}

export class RankSummaryFold {
  private readonly rows = new Map<string, RankRow>();
  private multi = false;

  private row(arm: string, rank: number): RankRow {
    const id = `${arm}\u0000${rank}`;
    let row = this.rows.get(id);
    if (!row) {
      row = {
        arm,
        rank,
        gates: 0,
        gates_passed: 0,
        reps: 0,
        modes: [],
        collectives_per_step: [],
        nodes: [],
        launches_per_step: [],
        same_as_rank0: 0,
        compared: 0,
      };
      this.rows.set(id, row);
    }
    return row;
  }

  /** One committed rep: each graphrt rank's answer, its hashes against rank 0's. */
  addRep(r: RepResult): void {
    const answers = (r.answers ?? []).flatMap((a) =>
      a.line.backend === 'command' ? [] : [{ rank: a.rank, line: a.line }],
    );
    if (answers.length === 0) return;
    if (answers.some((a) => a.line.world > 1)) this.multi = true;
    const rank0 = answers.find((a) => a.rank === 0);
    const rank0Hashes = rank0 === undefined ? undefined : JSON.stringify(rank0.line.hashes);
    for (const { rank, line } of answers) {
      const row = this.row(r.arm, rank);
      row.reps += 1;
      if (!row.modes.includes(line.mode)) row.modes.push(line.mode);
      addUnique(row.collectives_per_step, line.collectives_per_step);
      addUnique(row.nodes, line.nodes);
      addUnique(row.launches_per_step, line.launches_per_step);
      check(row, JSON.stringify(line.hashes), rank0Hashes);
    }
  }

  /** One committed gate: each graphrt rank's gate (a command rank's detail carries first_bad_output, null or not), its hashes against rank 0's. */
  addGate(g: GateResult): void {
    const detail = (g.detail ?? []).filter((d) => d.first_bad_output === undefined);
    if (detail.length > 1) this.multi = true;
    const hashes = (d: (typeof detail)[number]) => JSON.stringify([d.eager_hashes, d.graph_hashes]);
    const rank0 = detail.find((d) => d.rank === 0);
    for (const d of detail) {
      const row = this.row(g.arm, d.rank);
      row.gates += 1;
      if (d.pass) row.gates_passed += 1;
      addUnique(row.nodes, d.nodes);
      addUnique(row.launches_per_step, d.launches_per_step);
      check(row, hashes(d), rank0 === undefined ? undefined : hashes(rank0));
    }
  }

  /** Per arm and rank; none unless a record of the experiment ran on more than one rank. */
  result(): RankRow[] {
    if (!this.multi) return [];
    return [...this.rows.values()].sort((a, b) => (a.arm === b.arm ? a.rank - b.rank : a.arm < b.arm ? -1 : 1));
  }
}

export function rankSummary(reps: Iterable<RepResult>, gates: Iterable<GateResult>): RankRow[] {
  const f = new RankSummaryFold();
  for (const r of reps) f.addRep(r);
  for (const g of gates) f.addGate(g);
  return f.result();
}
