/**
 * A Slurm job's end time as squeue reports it (`squeue -h -j ID -o %e`): null when it has none
 * (no time limit); a squeue that fails throws, so a caller keeps the end it knew.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseSqueueEnd } from '../../jobs/slurm-allocation.ts';

const run = promisify(execFile);

export async function squeueEnd(job: string): Promise<number | null> {
  const { stdout } = await run('squeue', ['-h', '-j', job, '-o', '%e'], { timeout: 15_000 });
  return parseSqueueEnd(stdout);
}
