/**
 * `orch slurm up`: writes the run directory (credentials 0600, the batch script) and submits one
 * batch job of `--nodes` workers (batch-script.ts); returns the job id Slurm gave it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type BatchScriptInput, batchScript } from './batch-script.ts';
import { slurmCommand } from './slurm-commands.ts';
import { newRunDir, recordJob, writeCredentials } from './slurm-run-dir.ts';

export interface SlurmUpInput extends Omit<BatchScriptInput, 'dir'> {
  root: string;
  redisUrl: string;
  secret: Buffer;
}

export async function slurmUp(i: SlurmUpInput): Promise<{ job: string; dir: string }> {
  const dir = newRunDir(i.root);
  writeCredentials(dir, i.nodes, i.redisUrl, i.secret);
  const script = join(dir, 'job.sbatch');
  writeFileSync(script, batchScript({ ...i, dir }), { mode: 0o700 });
  // --parsable: `<id>` or `<id>;<cluster>`
  const job = (await slurmCommand('sbatch', ['--parsable', script])).trim().split(';')[0]!;
  recordJob(i.root, dir, {
    job,
    prefix: i.prefix,
    nodes: i.nodes,
    gpus_per_node: i.gpusPerNode,
    time: i.time,
    submitted: new Date().toISOString(),
  });
  return { job, dir };
}
