/**
 * One committed probe rep of `design: probe` (`<prefix>:experiment:<id>:probes`, field
 * `<block>/<arm>/<rep>`): every rank's five `probe` lines (native/PROTOCOL.md "Workloads"), with
 * the card each ran on. The worker writes it fenced by the lease epoch before the block commits
 * (store/lua/commit-probes.lua); only the record of the block's committed attempt is read.
 */
import { z } from 'zod';
import { GRAPHRT_PROBES } from './graphrt-protocol.ts';
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
  probes: z.array(ProbeOutcomeSchema),
});
export type ProbeRank = z.infer<typeof ProbeRankSchema>;

export const ProbeRecordSchema = RepIdentitySchema.extend({
  backend: z.enum(['cpu', 'cuda']),
  host: z.string(),
  ranks: z.array(ProbeRankSchema).min(1),
});
export type ProbeRecord = z.infer<typeof ProbeRecordSchema>;
