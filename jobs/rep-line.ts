/**
 * The core of a rep's answer line, whatever answers it: graphrt (jobs/graphrt-protocol.ts
 * `RepSchema`), a rank library (jobs/orch-rank-protocol.ts `OrchRankRepSchema`) or the worker for
 * a command workload (jobs/command-line.ts `CommandRepSchema`). Each of those is this core spread
 * into a strict object with its runtime's own fields beside it (graphrt: workload, launch and
 * collective counts, rank/world, the settle step; a library: per-output hashes, counters, CUPTI
 * launches; a command: the metric's step indexes and wall time), so a field every runtime gives is
 * defined once, here.
 */
import { z } from 'zod';

/** One reading of the device's clocks and temperature (NVML), before and after a rep. */
export const ClockReadingSchema = z.strictObject({
  sm_mhz: z.int(),
  mem_mhz: z.int(),
  temp_c: z.int(),
  power_w: z.number(),
  reasons: z.array(z.string()),
});
export type ClockReading = z.infer<typeof ClockReadingSchema>;

/** Device clocks read before the rep's first step and after its last. */
export const RepClocksSchema = z.strictObject({ start: ClockReadingSchema, end: ClockReadingSchema });
export type RepClocks = z.infer<typeof RepClocksSchema>;

/**
 * The fields of every rep line, with the bounds every runtime keeps. `graph`: the rep replayed a
 * graph captured for it (`fresh`) or before (`reused`), null when eager; `t_start_ns`/`t_end_ns`:
 * the rep's span on the rank's CLOCK_MONOTONIC (not integers in the schema: past 2^53 ns a JSON
 * number rounds to a few ns).
 */
export const repLineCore = {
  v: z.literal(1),
  type: z.literal('rep'),
  id: z.string(),
  arm: z.string(),
  mode: z.enum(['graph', 'eager']),
  graph: z.enum(['fresh', 'reused']).nullable().optional(),
  warmup_ms: z.array(z.number().min(0)).optional(),
  clocks: RepClocksSchema.optional(),
  /** volatile uncorrected ECC errors the card counted during the rep; absent where not counted, never a 0 for "not read" */
  ecc_errors: z.int().min(0).optional(),
  t_start_ns: z.number().min(0).optional(),
  t_end_ns: z.number().min(0).optional(),
  final: z.literal(true),
};

export const RepLineCoreSchema = z.object(repLineCore);
export type RepLineCore = z.infer<typeof RepLineCoreSchema>;
