/**
 * A night's rows for one spec, from what writeResults wrote (the analysis and summary.json):
 * one per comparison other than the A/A control, which is kept as `aa_pass` on every row. A spec
 * that did not run gets one row with arm = '' and its error. Each row carries the Slurm
 * allocation its experiment's workers ran in, from the report's provenance.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { NightlyRow, SlurmPlacement } from '../../history/history-store.ts';
import { parseStored } from '../../jobs/parse-stored.ts';
import type { Provenance } from '../report/provenance.ts';
import type { WrittenResults } from '../results/write-results.ts';

export type RowContext = Pick<
  NightlyRow,
  'run_id' | 'suite' | 'scheduled_at' | 'spec_file' | 'spec_name' | 'spec_hash' | 'commits' | 'pairing'
>;

const EMPTY = {
  metric: null,
  verdict: null,
  change: null,
  ci_low: null,
  ci_high: null,
  p_value: null,
  arm_value: null,
  reference_value: null,
  aa_pass: null,
  gates_pass: null,
  gates: null,
  finding: null,
  cards: [],
  hosts: [],
  confirms: null,
  slurm: null,
  node_change: null,
} as const;

/** The jobs, nodes and partitions of the hosts that ran blocks under Slurm; null when none did. */
export function slurmPlacement(p: Pick<Provenance, 'slurm'> | undefined): SlurmPlacement | null {
  const hosts = p?.slurm ?? [];
  if (hosts.length === 0) return null;
  const distinct = (pick: (h: (typeof hosts)[number]) => string) => [...new Set(hosts.map(pick))].sort();
  return { jobs: distinct((h) => h.job), nodes: distinct((h) => h.node), partitions: distinct((h) => h.partition) };
}

export function notRunRow(ctx: RowContext, experiment: string | null, error: string): NightlyRow {
  return {
    ...ctx,
    ...EMPTY,
    cards: [],
    hosts: [],
    experiment,
    experiment_state: 'not-run',
    results_dir: null,
    arm: '',
    reference: '',
    error,
  };
}

/** What a row reads of written results; the provenance is absent only where a caller analysed without writing (bench/). */
type RowSource = Pick<WrittenResults, 'dir' | 'state'> & {
  analysis: Omit<WrittenResults['analysis'], 'provenance'> & { provenance?: Provenance };
};

export function rowsFromResults(ctx: RowContext, experiment: string, w: RowSource): NightlyRow[] {
  const a = w.analysis;
  const gang = readGang(w.dir);
  const value = (arm: string) => {
    const s = a.arms.find((x) => x.arm === arm);
    return s ? (a.metric.statistic === 'mean' ? s.mean : s.median) : null;
  };
  const aaGate = a.gates.find((g) => g.name === 'aa');
  const failedGates = a.gates.filter((g) => g.pass === false);
  const common = {
    ...ctx,
    experiment,
    experiment_state: w.state,
    results_dir: w.dir,
    metric: a.metric.name,
    aa_pass: aaGate?.pass ?? null,
    gates_pass: failedGates.length === 0,
    gates: a.gates.map((g) => `${g.name}: ${g.pass === null ? 'n/a' : g.pass ? 'pass' : 'FAIL'}`).join(', '),
    finding: null,
    confirms: null,
    slurm: slurmPlacement(a.provenance),
    node_change: null,
    cards: gang.cards,
    hosts: gang.hosts,
    error:
      w.state === 'done'
        ? failedGates.length > 0
          ? failedGates.map((g) => g.message).join('; ')
          : null
        : `experiment ended ${w.state}`,
  };
  if (a.comparisons.length === 0) {
    return [
      {
        ...common,
        arm: '',
        reference: '',
        verdict: a.verdict,
        change: null,
        ci_low: null,
        ci_high: null,
        p_value: null,
        arm_value: null,
        reference_value: null,
      },
    ];
  }
  return a.comparisons.map((c) => ({
    ...common,
    arm: c.arm,
    reference: c.reference,
    verdict: c.verdict,
    change: c.relative.estimate,
    ci_low: c.relative.ci?.[0] ?? null,
    ci_high: c.relative.ci?.[1] ?? null,
    p_value: c.log_ratio.p,
    arm_value: value(c.arm),
    reference_value: value(c.reference),
  }));
}

/** The part of summary.json the row reads: every block's gang. */
const GangSummarySchema = z.object({
  blocks: z
    .array(z.object({ gang: z.array(z.object({ host: z.string(), cards: z.array(z.string()) })).optional() }))
    .optional(),
});

/** The cards and hosts every block's gang held, from summary.json (none when it cannot be read: the row is kept). */
function readGang(dir: string): { cards: string[]; hosts: string[] } {
  try {
    const file = join(dir, 'summary.json');
    const summary = parseStored(GangSummarySchema, readFileSync(file, 'utf8'), file);
    const parts = (summary.blocks ?? []).flatMap((b) => b.gang ?? []);
    return {
      cards: [...new Set(parts.flatMap((p) => p.cards.map((c) => `${p.host}/${c}`)))].sort(),
      hosts: [...new Set(parts.map((p) => p.host))].sort(),
    };
  } catch {
    return { cards: [], hosts: [] };
  }
}
