import { z } from 'zod';
import { LIMITS, LIMITS_FILE, paramLimit } from '../limits.ts';
import { intIn } from './bounded.ts';
import { strictObject } from './strict-object.ts';

/**
 * A size within graphrt's accepted range (native/limits.json, compiled into graphrt): checked
 * here so a spec graphrt would answer with BAD_PARAM is refused by `orch validate`, before any
 * card is taken.
 */
const size = (name: string) => {
  const range = paramLimit(name);
  if (range === undefined) throw new Error(`native-workload: param "${name}" is not in ${LIMITS_FILE}`);
  return intIn(range, `graphrt refuses a larger ${name} (BAD_PARAM)`);
};

// Defaults are the graphrt request defaults a newcomer can run on a laptop's CPU backend.
const ChainParamsSchema = strictObject({ kernels: size('kernels').default(64) });
const DecodeParamsSchema = strictObject({
  layers: size('layers').default(8),
  kernels_per_layer: size('kernels_per_layer').default(12), // 9 kernels do a layer's work; the rest are fillers
  hidden: size('hidden').default(256),
  max_pos: size('max_pos').default(4096),
});
const TrainParamsSchema = strictObject({
  params: size('params').default(16),
  param_size: size('param_size').default(4096),
});
const ProbeParamsSchema = strictObject({});

/** Fields every native workload has; `kind` selects the params. */
const common = {
  runtime: z.literal('native'),
  /** auto: CUDA where a GPU is visible, else the CPU backend; cuda refuses a CPU-only build. */
  backend: z.enum(['auto', 'cuda', 'cpu']).default('auto'),
  /** Steps run and discarded before measuring each rep (step 0 is never measured). */
  warmup: intIn(LIMITS.graphrt.warmup, 'graphrt refuses more warm-up steps per request').default(8),
  /** Measured steps per rep. */
  steps: intIn(LIMITS.graphrt.steps, 'graphrt refuses more steps per request').default(64),
};

export const NativeWorkloadSchema = z.discriminatedUnion('kind', [
  strictObject({ ...common, kind: z.literal('chain'), params: ChainParamsSchema.default({ kernels: 64 }) }),
  strictObject({
    ...common,
    kind: z.literal('decode'),
    params: DecodeParamsSchema.default({ layers: 8, kernels_per_layer: 12, hidden: 256, max_pos: 4096 }),
  }),
  strictObject({
    ...common,
    kind: z.literal('train'),
    params: TrainParamsSchema.default({ params: 16, param_size: 4096 }),
  }),
  strictObject({ ...common, kind: z.literal('probe'), params: ProbeParamsSchema.default({}) }),
]);
export type NativeWorkload = z.infer<typeof NativeWorkloadSchema>;
