/**
 * Whether tonight's row may be judged against the nights before it when some of them ran on other
 * Slurm nodes. Two nodes of one GPU model differ by more than many changes a nightly looks for, so
 * across nodes the absolute numbers (detect-shift.ts's series) are not one series: unless the spec
 * allows it (across_runs.allow_node_change), tonight is judged only against the earlier nights on
 * its own nodes, and the row says so. The paired verdict is not touched: its arms shared every
 * block, on the same nodes, whatever the nights before did.
 */
import type { NightlyRow } from '../../history/history-store.ts';
import { SHIFT_DEFAULTS } from './detect-shift.ts';

export interface NodeChange {
  /** the earlier nights tonight's absolute numbers may be judged against, oldest first */
  comparable: NightlyRow[];
  /** the reason recorded with the row (history column node_change); null: every night looked at ran where tonight did */
  note: string | null;
  /** nights on other nodes were left out of tonight's judgement */
  refused: boolean;
  /** the night before ran on other nodes than tonight: the change happened tonight */
  changedTonight: boolean;
}

/** The nodes a row's workers ran on, as one key; '' outside Slurm. */
const nodesKey = (r: NightlyRow): string => r.slurm?.nodes.join(',') ?? '';

/** Where a row's experiment ran, for a message. */
export function placement(r: NightlyRow): string {
  if (r.slurm === null) return 'outside Slurm';
  return `Slurm node${r.slurm.nodes.length === 1 ? '' : 's'} ${r.slurm.nodes.join(', ')} (job ${r.slurm.jobs.join(', ')}, partition ${r.slurm.partitions.join(', ') || '(none)'})`;
}

const nights = (n: number) => `${n} earlier night${n === 1 ? '' : 's'}`;

/** `before`: the earlier nights of tonight's series that ran and passed their gates, oldest first. */
export function nodeChange(tonight: NightlyRow, before: readonly NightlyRow[], allowed: boolean): NodeChange {
  const last = before.at(-1);
  const changedTonight = last !== undefined && nodesKey(last) !== nodesKey(tonight);
  // the nights tonight's baseline would be drawn from (detect-shift.ts's window)
  const elsewhere = before.slice(-SHIFT_DEFAULTS.window).filter((n) => nodesKey(n) !== nodesKey(tonight)).length;
  if (elsewhere === 0) return { comparable: [...before], note: null, refused: false, changedTonight };
  const change = changedTonight
    ? `ran on ${placement(tonight)}; the night before (${new Date(last!.scheduled_at).toISOString()}) on ${placement(last!)}: `
    : '';
  if (allowed) {
    return {
      comparable: [...before],
      note: changedTonight
        ? `${change}compared across the change, as the spec allows (across_runs.allow_node_change)`
        : null,
      refused: false,
      changedTonight,
    };
  }
  const comparable = before.filter((n) => nodesKey(n) === nodesKey(tonight));
  const enough = comparable.length >= SHIFT_DEFAULTS.minBaseline;
  return {
    comparable,
    note:
      `${change}not compared across Slurm nodes (two nodes differ by more than many changes looked for): judged only against the ${nights(comparable.length)} on ${placement(tonight)}` +
      `, ${elsewhere} of the last ${SHIFT_DEFAULTS.window} on other nodes left out` +
      (enough ? '' : ` — too few to judge its absolute numbers (${SHIFT_DEFAULTS.minBaseline} needed)`) +
      '; pin the nodes (sbatch --nodelist), or set across_runs: { allow_node_change: true } in the spec to compare across them',
    refused: true,
    changedTonight,
  };
}
