/**
 * Whether tonight's row may be judged against the nights before it when its experiment ran on
 * other Slurm nodes than they did. Two nodes of one GPU model differ by more than many changes a
 * nightly looks for, so across a node change the absolute numbers (detect-shift.ts's series) are
 * not one series: unless the spec allows it (across_runs.allow_node_change), tonight is judged
 * only against the earlier nights on its own nodes, and the row says so. The paired verdict is
 * not touched: its arms shared every block, on the same nodes, whatever the nights before did.
 */
import type { NightlyRow } from '../../history/history-store.ts';

export interface NodeChange {
  /** the earlier nights tonight's absolute numbers may be judged against, oldest first */
  comparable: NightlyRow[];
  /** the reason recorded with the row (history column node_change); null: the nodes did not change */
  note: string | null;
  /** tonight was not compared across the change */
  refused: boolean;
}

/** The nodes a row's workers ran on, as one key; '' outside Slurm. */
const nodesKey = (r: NightlyRow): string => r.slurm?.nodes.join(',') ?? '';

/** Where a row's experiment ran, for a message. */
export function placement(r: NightlyRow): string {
  if (r.slurm === null) return 'outside Slurm';
  return `Slurm node${r.slurm.nodes.length === 1 ? '' : 's'} ${r.slurm.nodes.join(', ')} (job ${r.slurm.jobs.join(', ')}, partition ${r.slurm.partitions.join(', ') || '(none)'})`;
}

/** `nights`: the earlier nights of tonight's series that ran and passed their gates, oldest first. */
export function nodeChange(tonight: NightlyRow, nights: readonly NightlyRow[], allowed: boolean): NodeChange {
  const last = nights.at(-1);
  if (last === undefined || nodesKey(last) === nodesKey(tonight)) return { comparable: [...nights], note: null, refused: false };
  const change = `ran on ${placement(tonight)}; the night before (${new Date(last.scheduled_at).toISOString()}) on ${placement(last)}`;
  if (allowed) {
    return { comparable: [...nights], note: `${change}: compared across the change, as the spec allows (across_runs.allow_node_change)`, refused: false };
  }
  const comparable = nights.filter((n) => nodesKey(n) === nodesKey(tonight));
  return {
    comparable,
    note:
      `${change}: not compared across the change (two nodes differ by more than many changes looked for); tonight's absolute numbers are judged only against the ${comparable.length} earlier night${comparable.length === 1 ? '' : 's'} on the same nodes — ` +
      'pin the nodes (sbatch --nodelist), or set across_runs: { allow_node_change: true } in the spec to compare across them',
    refused: true,
  };
}
