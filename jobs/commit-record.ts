/** Which attempt committed a block (`<prefix>:experiment:<id>:commits`, field `<block>`). */
import { z } from 'zod';
import { MachineRecordSchema } from './machine-record.ts';
import { RankOriginSchema } from './rank-origin.ts';
import { RankStartupSchema } from './rank-startup.ts';
import { SlurmProvenanceSchema } from './slurm-allocation.ts';

/**
 * A host of the gang as its worker read it when the attempt started (worker/machine-record.ts):
 * its machine record and, under Slurm, the allocation it ran in. The report's provenance reads
 * them here, not from the stream's block-start event.
 */
export const GangHostSchema = z.strictObject({
  host: z.string(),
  machine: MachineRecordSchema,
  slurm: SlurmProvenanceSchema.optional(),
});
export type GangHost = z.infer<typeof GangHostSchema>;

export const CommitRecordSchema = z.object({
  attempt: z.int().positive().meta({ unit: 'count' }),
  epoch: z.int().min(0).meta({ unit: 'count' }),
  host: z.string(),
  /** epoch ms */
  committed: z
    .number()
    .meta({ unit: 'ms since the epoch', description: "the commit, on the committing worker's clock" })
    .optional(),
  /**
   * The attempt's timeline on the committing worker's clock (epoch ms): its block-start (the lease
   * taken, the attempt begun), every rank's hello in (`ready`), every identity gate done (`gated`).
   * Card time (orchestrator/stats/busy-share.ts) reads the lease from here, `started` to
   * `committed`, not from the event stream. Absent on older records.
   */
  started: z
    .number()
    .meta({ unit: 'ms since the epoch', description: "the attempt's block-start (its lease taken), same clock" })
    .optional(),
  ready: z.number().meta({ unit: 'ms since the epoch', description: "every rank's hello in, same clock" }).optional(),
  gated: z
    .number()
    .meta({ unit: 'ms since the epoch', description: 'every identity gate done, same clock' })
    .optional(),
  /**
   * Where each rank of the gang ran, from its hello (jobs/rank-origin.ts), every host of a spread
   * gang, rank order: the provenance's hosts, cards and devices read it, not the event stream.
   * Absent on older records.
   */
  ranks: z.array(RankOriginSchema).optional(),
  /**
   * How each rank of this host's part started (jobs/rank-startup.ts): card time's start-up split and
   * the blocks' sizing read it. Absent on older records.
   */
  startup: z.array(RankStartupSchema).optional(),
  /** every host of the gang (one; a spread gang's each), as its worker read it at the start. Absent on older records. */
  hosts: z.array(GangHostSchema).optional(),
});
export type CommitRecord = z.infer<typeof CommitRecordSchema>;
