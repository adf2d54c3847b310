/**
 * native/limits.json as typed data: the bounds `orch validate` checks a spec against. Its
 * `graphrt` part is compiled into graphrt (native/cmake/limits.cmake), which refuses a request
 * beyond it with BAD_PARAM; reading the same file here is what keeps the two from drifting.
 * The `orch` part bounds what only orch enforces (plan size, timers, names, environment).
 * What a rank may print (a line's length, the output stored in the event stream per rep and per
 * experiment) is bounded in jobs/line-limit.ts.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export const LIMITS_FILE = 'native/limits.json';

const Range = z.object({ min: z.number(), max: z.number() });
const Max = z.object({ max: z.number() });
/** `[coefficient, param, param…]`: coefficient × the product of the params. */
const Term = z.tuple([z.number()], z.string());

const LimitsSchema = z.object({
  graphrt: z.object({
    params: z.record(z.string(), Range.extend({ default: z.number() })),
    warmup: Range,
    steps: Range,
    replays: Range,
    world: Range,
    device_bytes: z.object({
      max: z.object({ cpu: z.number(), cuda: z.number() }),
      workloads: z.record(z.string(), z.array(Term)),
    }),
  }),
  orch: z.object({
    reps: Range,
    blocks: Range,
    plan_reps: Max,
    identity_replays: z.object({ min: z.number() }),
    timeout_s: Max,
    seed: Max,
    priority: Range,
    name_length: Max,
    list_length: Max,
    path_length: Max,
    command_length: Max,
    env: z.object({ count: z.number(), name_length: z.number(), value_length: z.number() }),
    spec_file: z.object({ bytes: z.number(), depth: z.number(), aliases: z.number() }),
  }),
});
export type Limits = z.infer<typeof LimitsSchema>;

export const LIMITS: Limits = LimitsSchema.parse(
  JSON.parse(readFileSync(new URL(`../${LIMITS_FILE}`, import.meta.url), 'utf8')),
);

export type NativeBackend = keyof Limits['graphrt']['device_bytes']['max'];

/** The range graphrt accepts for a workload param; undefined for a name it does not know. */
export function paramLimit(name: string): Limits['graphrt']['params'][string] | undefined {
  return Object.hasOwn(LIMITS.graphrt.params, name) ? LIMITS.graphrt.params[name] : undefined;
}

/**
 * The bytes graphrt allocates on its device for a workload with these params; a param the
 * request leaves out counts at graphrt's request default, as graphrt itself does.
 */
export function deviceBytes(workload: string, params: Readonly<Record<string, number>>): number {
  const terms = LIMITS.graphrt.device_bytes.workloads[workload] ?? [];
  let bytes = 0;
  for (const [coefficient, ...factors] of terms) {
    bytes += factors.reduce((product, name) => product * (params[name] ?? paramLimit(name)?.default ?? 0), coefficient);
  }
  return bytes;
}

/**
 * The device-memory bound a spec's backend runs under: `auto` may land on either backend (CUDA
 * where a GPU is visible, else the CPU), so it gets the smaller bound.
 */
export function maxDeviceBytes(backend: NativeBackend | 'auto'): { bytes: number; backend: NativeBackend } {
  const max = LIMITS.graphrt.device_bytes.max;
  if (backend !== 'auto') return { bytes: max[backend], backend };
  return max.cpu <= max.cuda ? { bytes: max.cpu, backend: 'cpu' } : { bytes: max.cuda, backend: 'cuda' };
}

/** `4.0 GiB`, `512.0 MiB`: a byte count a user reads next to the exact number. */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${bytes} bytes` : `${v.toFixed(1)} ${units[u]}`;
}
