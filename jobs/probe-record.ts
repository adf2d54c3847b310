/**
 * One committed probe rep of `design: probe` (`<prefix>:experiment:<id>:probes`, field
 * `<block>/<arm>/<rep>`): every rank's five `probe` lines (native/PROTOCOL.md "Workloads"), with
 * the card each ran on; or, for the trace probe of a resident command rank (`kind: trace`), every
 * rank's `trace` answer (ranklib/PROTOCOL.md "trace") and what graphrt's chain measured on its card
 * for the graph-node floor. The worker writes it fenced by the lease epoch before the block commits
 * (store/lua/commit-probes.lua); only the record of the block's committed attempt is read.
 */
import { z } from 'zod';
import { ChainFloorRunSchema } from './chain-floor-run.ts';
import { GRAPHRT_PROBES } from './graphrt-protocol.ts';
import { OrchRankTraceSchema } from './orch-rank-protocol.ts';
import { RepIdentitySchema } from './rep-result.ts';

const count = z.int().min(0);

export const ProbeOutcomeSchema = z.object({
  name: z.enum(GRAPHRT_PROBES),
  pass: z.boolean(),
  /** the probe's own measurements, as graphrt printed them (its `detail` object) */
  detail: z.record(z.string(), z.unknown()),
});
export type ProbeOutcome = z.infer<typeof ProbeOutcomeSchema>;

export const ProbeRankSchema = z.object({
  rank: count,
  card: z.string(),
  /** the hello line's device name (`NVIDIA H200`, `cpu emulation: …`) */
  device: z.string(),
  /** graphrt's capture probes; empty in a trace probe */
  probes: z.array(ProbeOutcomeSchema),
  /** the trace probe: the program's answer */
  trace: OrchRankTraceSchema.optional(),
  /** the trace probe: graphrt's chain on this rank's card */
  floor: ChainFloorRunSchema.optional(),
});
export type ProbeRank = z.infer<typeof ProbeRankSchema>;

export const ProbeRecordSchema = RepIdentitySchema.extend({
  /** absent: graphrt's capture probe */
  kind: z.literal('trace').optional(),
  backend: z.enum(['cpu', 'cuda']),
  host: z.string(),
  ranks: z.array(ProbeRankSchema).min(1),
});
export type ProbeRecord = z.infer<typeof ProbeRecordSchema>;
