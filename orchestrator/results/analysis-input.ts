/**
 * An experiment's records as the analysis takes them (orchestrator/stats/types.ts AnalysisInput):
 * the spec's metric, gates, hygiene and base reference, the committed reps, failures, gates and
 * probes, the blocks that ended committed (a sequential plan's looks) and, for an experiment that
 * ended cancelled or failed, why (its outcome, never a speed verdict). One place, so the
 * report and the scheduler's sequential look (orchestrator/scheduler/sequential-stop.ts) judge the
 * same input.
 */

import type { CommitRecord } from '../../jobs/commit-record.ts';
import { deviceOf } from '../../jobs/rank-origin.ts';
import { failedBlocksOutput } from '../../jobs/rank-output-tail.ts';
import type { BlockState } from '../../store/experiment-store.ts';
import { DEFAULT_ALPHA } from '../stats/defaults.ts';
import type { AnalysisInput, BlockEnd } from '../stats/types.ts';
import type { CollectedRecords } from './collect-results.ts';
import { stoppedExperiment } from './stopped-experiment.ts';

export type AnalysisRecords = Pick<CollectedRecords, 'exp' | 'blocks' | 'reps' | 'failed' | 'gates'> &
  Partial<Pick<CollectedRecords, 'probes' | 'rankOutputs' | 'commits'>>;

/** The devices the committed blocks' ranks named in their hellos (jobs/rank-origin.ts), each once. */
export function committedDevices(commits: Record<string, CommitRecord> = {}): string[] {
  const out = new Set<string>();
  for (const c of Object.values(commits))
    for (const r of c.ranks ?? []) {
      const d = deviceOf(r);
      if (d !== null) out.add(d);
    }
  return [...out];
}

/** The devices come from the commit records (none without them: the scheduler's sequential look). */
export function analysisInput(c: AnalysisRecords): AnalysisInput {
  const { exp } = c;
  const ref = exp.spec.gates.base_reference;
  return {
    plan: exp.plan,
    experiment: exp.id,
    reps: Object.values(c.reps),
    // a failed record carries its rep's identity (jobs/failed-rep.ts): nothing is read back from the field
    failed: Object.values(c.failed),
    gates: Object.values(c.gates),
    metric: { name: exp.spec.metric.name, better: exp.spec.metric.better, statistic: exp.spec.metric.statistic },
    min_effect: exp.spec.metric.min_effect,
    alpha: DEFAULT_ALPHA,
    probes: Object.values(c.probes ?? {}),
    devices: committedDevices(c.commits),
    ...(exp.spec.hygiene === undefined ? {} : { hygiene: exp.spec.hygiene }),
    ended: endedBlocks(c.blocks),
    stopped: stoppedExperiment(exp),
    rank_output: failedBlocksOutput(
      Object.values(c.rankOutputs ?? {}),
      new Set(c.blocks.filter((b) => b.phase === 'failed').map((b) => b.block)),
    ),
    ...(ref === undefined
      ? {}
      : {
          base_reference: {
            tolerance: ref.tolerance,
            build: { name: ref.build, commit: exp.spec.builds?.[ref.build]?.commit ?? null },
            ...(ref.value === undefined ? {} : { value: ref.value }),
          },
        }),
  };
}

/** The blocks that ended with their reps committed, with when: a sequential plan looks in this order. */
export function endedBlocks(blocks: readonly BlockState[]): BlockEnd[] {
  return blocks.flatMap((b) =>
    b.phase === 'done' && b.ended_at !== null ? [{ block: b.block, ended_at: b.ended_at }] : [],
  );
}
