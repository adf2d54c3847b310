/**
 * `across_runs`: what may be compared between two experiments of one spec (`orch compare`, the
 * nightly's series of nights), as opposed to inside one, where the arms share every block. Part
 * of the spec, so part of its hash: the policy is registered before any number exists, never
 * chosen after seeing which comparison looks better.
 */
import { z } from 'zod';
import { strictObject } from './strict-object.ts';

export const AcrossRunsSchema = strictObject({
  /**
   * Compare runs whose Slurm workers ran on different nodes. Off: `orch compare` refuses such a
   * pair and the nightly judges tonight's absolute numbers only against nights on the same nodes
   * (two nodes of one GPU model differ by more than many changes one looks for); the refusal is
   * recorded with its reason. The CLI's `--allow-node-change` overrides it for one comparison.
   */
  allow_node_change: z.boolean().default(false),
});
export type AcrossRuns = z.infer<typeof AcrossRunsSchema>;

/** The part of a spec document `orch compare` reads back from a results directory's spec.yaml. */
export const AcrossRunsOfSpecSchema = z.object({ across_runs: AcrossRunsSchema.optional() });

/** Whether a parsed spec lets its runs be compared across Slurm node changes. */
export function allowsNodeChange(spec: { across_runs?: AcrossRuns | undefined }): boolean {
  return spec.across_runs?.allow_node_change === true;
}
