/**
 * The machine a block ran on, as its worker saw it when the block started (worker/machine-record.ts),
 * carried on the block-start event (jobs/worker-event.ts) into the report's provenance: the OS and
 * kernel, the CPU, the memory, Node and the C compiler on PATH, and for each GPU of the gang what
 * nvidia-smi said of it then (UUID, driver, power limit, clocks, persistence and compute mode).
 * A value the worker could not read is null, never a guess; the report prints "not reported".
 */
import { z } from 'zod';

const text = z.string().nullable();
/** A reading in `unit`, null when it could not be read. */
const reading = (unit: string) => z.number().meta({ unit }).nullable();

export const GpuStateSchema = z.strictObject({
  /** the card id (the GPU UUID for a cuda card) */
  card: z.string(),
  uuid: text,
  name: text,
  driver: text,
  power_limit_w: reading('W'),
  /** the clocks when the block started, the most the SM can run at, and an application clock setting */
  sm_mhz: reading('MHz'),
  mem_mhz: reading('MHz'),
  max_sm_mhz: reading('MHz'),
  applications_sm_mhz: reading('MHz'),
  persistence_mode: text,
  compute_mode: text,
});
export type GpuState = z.infer<typeof GpuStateSchema>;

export const MachineRecordSchema = z.strictObject({
  os: text,
  /** the distribution's PRETTY_NAME (/etc/os-release) */
  distribution: text,
  kernel: text,
  arch: text,
  cpu_model: text,
  cpu_threads: z.int().min(0).meta({ unit: 'count' }).nullable(),
  memory_bytes: reading('bytes'),
  node: text,
  /** the first line of `cc --version` */
  compiler: text,
  gpus: z.array(GpuStateSchema),
  /** why the GPUs are not in `gpus` (nvidia-smi missing or refusing the query), when they are not */
  gpus_unread: text,
});
export type MachineRecord = z.infer<typeof MachineRecordSchema>;
