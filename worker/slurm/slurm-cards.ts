/**
 * The cards of a worker under Slurm: the GPUs Slurm gave its step (jobs/slurm-allocation.ts),
 * matched to nvidia-smi's by index; on a node without a GPU (fake GRES), the cpu card of each
 * GRES index. A job that asked for no GPU falls back to the worker's own discovery.
 */
import { UserInputError } from '../../jobs/errors.ts';
import type { SlurmAllocation } from '../../jobs/slurm-allocation.ts';
import type { Card } from '../../store/card-registry.ts';
import { cpuCard, discoverCards, type GpuRow, gpuCard, listGpus } from '../discover-cards.ts';

export async function slurmCards(
  host: string,
  alloc: SlurmAllocation,
  fallback: { cpuCards?: number },
  gpus?: GpuRow[],
): Promise<Card[]> {
  const rows = gpus ?? (await listGpus());
  if (alloc.gpus.length === 0) return discoverCards(host, { cards: 'auto', cpuCards: fallback.cpuCards, gpus: rows });
  if (rows.length === 0) return alloc.gpus.map((i) => cpuCard(host, i));
  return alloc.gpus.map((i) => {
    const g = rows.find((r) => r.index === i);
    if (!g) {
      throw new UserInputError(
        'SLURM_GPU_UNKNOWN',
        `${alloc.gpusFrom}: Slurm gave this step GPU ${i}, but nvidia-smi lists ${rows.map((r) => r.index).join(', ')}`,
        {
          hint: "check the node's gres.conf against nvidia-smi; or pass --cards with the GPUs this step may use",
        },
      );
    }
    return gpuCard(host, g);
  });
}
