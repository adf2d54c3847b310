import { z } from 'zod';
import { strictObject } from './strict-object.ts';

/** graphrt's toggles (native/PROTOCOL.md "Requests"); a native spec may name only these. */
export const NATIVE_TOGGLES = ['graph', 'pdl', 'overlap', 'split_combine', 'pin', 'freeze_pointer', 'lazy_init', 'allreduce'] as const;
export type NativeToggle = (typeof NATIVE_TOGGLES)[number];

/**
 * A size within graphrt's accepted range (native/PROTOCOL.md "params"): checked here so a spec
 * graphrt would answer with BAD_PARAM is refused by `orch validate`, before any card is taken.
 */
const size = (min: number, max: number) => z.int().min(min).max(max);

// Defaults are the graphrt request defaults a newcomer can run on a laptop's CPU backend.
const ChainParamsSchema = strictObject({ kernels: size(1, 100_000).default(64) });
const DecodeParamsSchema = strictObject({
  layers: size(1, 256).default(8),
  kernels_per_layer: size(9, 256).default(12), // 9 kernels do a layer's work; the rest are fillers
  hidden: size(2, 1024).default(256),
  max_pos: size(1, 65_536).default(4096),
});
const TrainParamsSchema = strictObject({ params: size(1, 4096).default(16), param_size: size(1, 4_194_304).default(4096) });
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
