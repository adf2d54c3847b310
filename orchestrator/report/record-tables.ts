/**
 * The tables of report.md beside the analysis, from the committed records alone (never the event
 * stream, which may cut a rep line): the ranks of a multi-rank experiment (rank-summary.ts), the
 * launches per arm (launch-summary.ts, rank 0's answer of each rep) and the card time per card
 * (busy-share.ts). The writer of results reads the records from Redis, `orch report --from` from
 * the results directory (reps.jsonl, summary.json's gates and commits): the same tables.
 */
import type { CommitRecord } from '../../jobs/commit-record.ts';
import type { GateResult } from '../../jobs/gate-result.ts';
import type { RepResult } from '../../jobs/rep-result.ts';
import { type BusyShareRow, busyShare } from '../stats/busy-share.ts';
import { type LaunchRow, LaunchSummaryFold } from '../stats/launch-summary.ts';
import { type RankRow, rankSummary } from '../stats/rank-summary.ts';

export interface RecordTables {
  ranks: RankRow[];
  busy: BusyShareRow[];
  launches: LaunchRow[];
}

export interface CommittedRecords {
  reps: readonly RepResult[];
  gates: readonly GateResult[];
  commits: Readonly<Record<string, CommitRecord>>;
}

/** The committed reps in the order they ran: by block, then position. */
export function repsInOrder(reps: Iterable<RepResult>): RepResult[] {
  return [...reps].sort((a, b) => a.block - b.block || a.position - b.position);
}

export function recordTables(c: CommittedRecords): RecordTables {
  const reps = repsInOrder(c.reps);
  const launches = new LaunchSummaryFold();
  for (const r of reps) {
    const rank0 = r.answers?.find((a) => a.rank === 0);
    if (rank0 !== undefined) launches.add(rank0.line);
  }
  return { ranks: rankSummary(reps, c.gates), busy: busyShare(reps, c.commits), launches: launches.rows() };
}
