import { z } from 'zod';
import { strictObject } from './strict-object.ts';

/** graphrt's toggles (native/PROTOCOL.md "Requests"); a native spec may name only these. */
export const NATIVE_TOGGLES = ['graph', 'pdl', 'overlap', 'split_combine', 'pin', 'freeze_pointer', 'lazy_init', 'allreduce'] as const;
export type NativeToggle = (typeof NATIVE_TOGGLES)[number];

const size = z.int().positive();

// Defaults are the graphrt request defaults a newcomer can run on a laptop's CPU backend.
const ChainParamsSchema = strictObject({ kernels: size.default(64) });
const DecodeParamsSchema = strictObject({
  layers: size.default(8),
  kernels_per_layer: size.default(12),
  hidden: size.default(256),
  max_pos: size.default(4096),
});
const TrainParamsSchema = strictObject({ params: size.default(16), param_size: size.default(4096) });
const ProbeParamsSchema = strictObject({});

/** Fields every native workload has; `kind` selects the params. */
const common = {
  runtime: z.literal('native'),
  /** auto: CUDA where a GPU is visible, else the CPU backend; cuda refuses a CPU-only build. */
  backend: z.enum(['auto', 'cuda', 'cpu']).default('auto'),
  /** Steps run and discarded before measuring each rep (step 0 is never measured). */
  warmup: z.int().min(0).default(8),
  /** Measured steps per rep. */
  steps: z.int().min(1).default(64),
};

export const NativeWorkloadSchema = z.discriminatedUnion('kind', [
  strictObject({ ...common, kind: z.literal('chain'), params: ChainParamsSchema.default({ kernels: 64 }) }),
  strictObject({
    ...common,
    kind: z.literal('decode'),
    params: DecodeParamsSchema.default({ layers: 8, kernels_per_layer: 12, hidden: 256, max_pos: 4096 }),
  }),
  strictObject({ ...common, kind: z.literal('train'), params: TrainParamsSchema.default({ params: 16, param_size: 4096 }) }),
  strictObject({ ...common, kind: z.literal('probe'), params: ProbeParamsSchema.default({}) }),
]);
export type NativeWorkload = z.infer<typeof NativeWorkloadSchema>;
