/** A card a worker offers (store/card-registry.ts keeps them in `<prefix>:cards`, one JSON each). */
import { z } from 'zod';
import { CapabilitySchema } from './worker-capabilities.ts';

export const CardSchema = z.object({
  id: z.string().min(1),
  host: z.string().min(1),
  backend: z.enum(['cpu', 'cuda']),
  /** nvidia-smi index, or N of cpu:N */
  index: z.number().int().nonnegative(),
  /** GPU UUID (what CUDA_VISIBLE_DEVICES gets); for cpu cards the card id */
  uuid: z.string().min(1),
  name: z.string(),
  /** cuda: nvidia-smi's memory.total (MiB); absent on cpu cards and where it was not reported (jobs/card-requirements.ts) */
  memory_mib: z.number().int().positive().optional(),
  /** cuda: nvidia-smi's compute_cap, "major.minor"; absent on cpu cards and on drivers that do not report it */
  compute_capability: z
    .string()
    .regex(/^\d+\.\d+$/)
    .optional(),
  /** what its host's worker runs: orch version and commit, graphrt build; a gang never mixes two */
  version: z.string().optional(),
  /** what its host's worker allows beyond graphrt (jobs/worker-capabilities.ts); absent: nothing */
  caps: z.array(CapabilitySchema).optional(),
  /**
   * The last moment its worker may hold a lease on it (ms since the epoch): a Slurm allocation's
   * end less the worker's drain margin (jobs/slurm-allocation.ts). No block expected to end later
   * is granted on it. Absent: no end.
   */
  until: z.number().int().positive().optional(),
});
export type Card = z.infer<typeof CardSchema>;
