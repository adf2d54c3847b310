/**
 * A worker's Slurm allocation, as the job step's environment tells it (pure: the caller hands in
 * the environment and squeue's answer). Slurm owns the cards between jobs; inside the allocation
 * orch's leases schedule them, so a worker under Slurm registers only the GPUs Slurm gave its
 * step, under a host name of its own per job (two allocations on one node are two hosts with
 * disjoint cards), with the job's id, node list and partition as the host's provenance.
 *
 * Which GPUs: SLURM_STEP_GPUS (the step's, global indexes), else SLURM_JOB_GPUS (the batch
 * step's), else CUDA_VISIBLE_DEVICES. On a node without a GPU (a test cluster's fake GRES:
 * character devices Slurm counts but nothing can run on) each GRES index becomes the cpu card of
 * that index, run by graphrt's CPU backend: `cpu:<index>@<host>`.
 */
import { z } from 'zod';
import { UserInputError } from './errors.ts';

export const SlurmProvenanceSchema = z.object({
  job: z.string().min(1),
  /** the allocation's node list as Slurm writes it (`gpu[01-04]`) */
  nodes: z.string(),
  partition: z.string(),
  /** the node this worker runs on */
  node: z.string().min(1),
  /** the allocation's end (ms since the epoch); null when Slurm gave no limit */
  end: z.number().meta({ unit: 'ms since the epoch' }).nullable(),
});
export type SlurmProvenance = z.infer<typeof SlurmProvenanceSchema>;

export interface SlurmAllocation {
  provenance: SlurmProvenance;
  /** the GRES GPU indexes given to this step, in Slurm's order; [] when the job asked for no GPU */
  gpus: number[];
  /** where the list came from, for messages */
  gpusFrom: string | null;
}

/** Whether this process runs inside a Slurm job. */
export function underSlurm(env: NodeJS.ProcessEnv): boolean {
  return (env.SLURM_JOB_ID ?? '') !== '';
}

/** The allocation of the job this process runs in; the end from SLURM_JOB_END_TIME (seconds) when set, else `endFromSqueue`. */
export function slurmAllocation(env: NodeJS.ProcessEnv, endFromSqueue: number | null): SlurmAllocation {
  const job = env.SLURM_JOB_ID ?? '';
  if (job === '')
    throw new UserInputError(
      'SLURM_ENV',
      'orch worker --slurm on: SLURM_JOB_ID is not set (this process is not inside a Slurm job)',
      { hint: 'run it under srun or sbatch (orch slurm up does), or leave --slurm at auto' },
    );
  const node = env.SLURMD_NODENAME ?? env.SLURM_TOPOLOGY_ADDR ?? '';
  if (node === '')
    throw new UserInputError('SLURM_ENV', `Slurm job ${job}: SLURMD_NODENAME is not set (a job step sets it)`, {
      hint: 'start the worker with srun inside the allocation, not from the batch script alone',
    });
  const listed = (['SLURM_STEP_GPUS', 'SLURM_JOB_GPUS', 'CUDA_VISIBLE_DEVICES'] as const).find(
    (k) => (env[k] ?? '').trim() !== '',
  );
  const gpus = listed === undefined ? [] : gpuIndexes(listed, env[listed] ?? '');
  const endEnv = env.SLURM_JOB_END_TIME;
  const end = endEnv !== undefined && /^\d+$/.test(endEnv) ? Number(endEnv) * 1000 : endFromSqueue;
  return {
    provenance: {
      job,
      nodes: env.SLURM_JOB_NODELIST ?? env.SLURM_NODELIST ?? node,
      partition: env.SLURM_JOB_PARTITION ?? '',
      node,
      end,
    },
    gpus,
    gpusFrom: listed ?? null,
  };
}

function gpuIndexes(name: string, value: string): number[] {
  const parts = value.split(',').map((s) => s.trim());
  const bad = parts.find((p) => !/^\d+$/.test(p));
  if (bad !== undefined) {
    throw new UserInputError('SLURM_ENV', `${name}=${value}: "${bad}" is not a GPU index`, {
      hint: 'orch reads Slurm GRES indexes (SLURM_STEP_GPUS); a list of GPU UUIDs is not one — pass --cards with the UUIDs instead',
    });
  }
  return parts.map(Number);
}

/**
 * squeue's end time (`squeue -h -j ID -o %e`): local time as `2026-12-03T15:21:33`, or
 * `N/A`/`Unknown`/`NONE` while it has none. ms since the epoch, or null.
 */
export function parseSqueueEnd(text: string): number | null {
  const t = text.trim();
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/.test(t)) return null;
  // no zone in the text: Date reads it as local time, as squeue wrote it
  const ms = new Date(t).getTime();
  return Number.isFinite(ms) ? ms : null;
}

/**
 * The node's address as Slurm knows it, from `scontrol show node -o NAME` (`… NodeAddr=gpu07.example
 * NodeHostName=gpu07 …`): the address slurmctld and the other nodes reach it at, so on the
 * allocation's network. Null when the line names none.
 */
export function parseNodeAddr(text: string): string | null {
  return /(?:^|\s)NodeAddr=(\S+)/.exec(text)?.[1] ?? null;
}

/** The worker's host name under Slurm: the node and the job, so two allocations on one node are two hosts. */
export function slurmHostName(p: Pick<SlurmProvenance, 'node' | 'job'>): string {
  return `${p.node.replace(/[^A-Za-z0-9_.-]/g, '-')}-slurm${p.job}`;
}
