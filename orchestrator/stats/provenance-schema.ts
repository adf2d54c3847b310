/**
 * The provenance of report.json (orchestrator/report/provenance.ts, kept in the analysis when results
 * are written) as zod, part of report.json's definition (analysis-schema.ts): where the numbers came
 * from, each number with its unit in `.meta({ unit })`.
 */
import { z } from 'zod';

export const ClockSchema = z
  .strictObject({
    sm_mhz: z.number().meta({ unit: 'MHz' }),
    mem_mhz: z.number().meta({ unit: 'MHz' }),
  })
  .meta({ id: 'Clock' });
export type Clock = z.infer<typeof ClockSchema>;

export const ProvenanceSchema = z
  .strictObject({
    orch: z.strictObject({
      version: z.string().nullable(),
      commit: z.string().nullable(),
      dirty: z.boolean().nullable().optional(),
    }),
    spec_hash: z.string(),
    workload_hash: z.string(),
    created: z.string(),
    ended: z.string().nullable(),
    builds: z.array(
      z.strictObject({
        name: z.string(),
        ref: z.string(),
        commit: z.string().nullable(),
        dirty: z.boolean(),
      }),
    ),
    graphrt: z.array(z.string()),
    hosts: z.array(z.string()),
    /** the Slurm allocation of each host whose worker ran in one (absent in results written before it was recorded) */
    slurm: z
      .array(
        z.strictObject({
          host: z.string(),
          /** the node the host's worker ran on */
          node: z.string(),
          job: z.string(),
          nodes: z.string(),
          partition: z.string(),
        }),
      )
      .optional(),
    cards: z.array(
      z.strictObject({
        host: z.string(),
        card: z.string(),
        backend: z.string(),
        name: z.string().nullable(),
        sm: z.string().nullable(),
        driver: z.string().nullable(),
        cuda_runtime: z.string().nullable(),
        clocks: z.strictObject({
          start: ClockSchema.nullable(),
          end: ClockSchema.nullable(),
        }),
      }),
    ),
    throttle: z.strictObject({
      reasons: z.record(z.string(), z.int().meta({ unit: 'count' })),
      reps: z.array(z.string()),
    }),
    machines: z
      .array(
        z.strictObject({
          host: z.string(),
          os: z.string().nullable(),
          distribution: z.string().nullable(),
          kernel: z.string().nullable(),
          arch: z.string().nullable(),
          cpu_model: z.string().nullable(),
          cpu_threads: z.int().meta({ unit: 'count' }).nullable(),
          memory_bytes: z.number().meta({ unit: 'bytes' }).nullable(),
          node: z.string().nullable(),
          compiler: z.string().nullable(),
          gpus_unread: z.string().nullable(),
          gpus: z.array(
            z.strictObject({
              card: z.string(),
              uuid: z.string().nullable(),
              name: z.string().nullable(),
              driver: z.string().nullable(),
              power_limit_w: z.number().meta({ unit: 'W' }).nullable(),
              sm_mhz: z.number().meta({ unit: 'MHz' }).nullable(),
              mem_mhz: z.number().meta({ unit: 'MHz' }).nullable(),
              max_sm_mhz: z.number().meta({ unit: 'MHz' }).nullable(),
              applications_sm_mhz: z.number().meta({ unit: 'MHz' }).nullable(),
              persistence_mode: z.string().nullable(),
              compute_mode: z.string().nullable(),
            }),
          ),
        }),
      )
      .optional(),
  })
  .meta({ id: 'Provenance' });
export type Provenance = z.infer<typeof ProvenanceSchema>;
