/**
 * The Slurm client commands orch runs (sbatch, squeue, scancel), each a clear SLURM_COMMAND
 * error with Slurm's own words when it is missing or refuses. Their environment leaves out
 * orch's credentials: sbatch exports the caller's environment into the job, where
 * `scontrol show job` and the job's processes would see them.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { UserInputError } from '../../jobs/errors.ts';

const run = promisify(execFile);

/** Variables that hold a credential, or a URL that may carry a password: never handed to a Slurm job. */
const CREDENTIALS = ['REDIS_URL', 'ORCH_CLUSTER_SECRET', 'ORCH_SUBMIT_TOKEN', 'ORCH_DASHBOARD_TOKEN', 'ORCH_DB_URL'];

export function slurmEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const k of CREDENTIALS) delete out[k];
  return out;
}

export async function slurmCommand(cmd: 'sbatch' | 'squeue' | 'scancel' | 'scontrol', args: string[]): Promise<string> {
  try {
    const { stdout } = await run(cmd, args, { env: slurmEnv(), timeout: 30_000 });
    return stdout;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    const why = e.code === 'ENOENT' ? `${cmd} is not on PATH` : (e.stderr ?? '').trim() || e.message;
    throw new UserInputError('SLURM_COMMAND', `${cmd} ${args.join(' ')}: ${why}`, {
      hint:
        e.code === 'ENOENT'
          ? 'run orch slurm on a Slurm login node (slurm-client installed)'
          : 'fix what Slurm said (partition, account, time limit, GRES) and run again',
    });
  }
}

/** A job's state, node list, end time and pending reason; null when Slurm no longer knows it. */
export async function squeueJob(
  job: string,
): Promise<{ state: string; nodes: string; end: string; reason: string } | null> {
  const out = await slurmCommand('squeue', ['-h', '-j', job, '-o', '%T|%N|%e|%r']).catch((err: unknown) => {
    // squeue names an ended job invalid once it left slurmctld's memory (MinJobAge)
    if (err instanceof UserInputError && /Invalid job id/i.test(err.message)) return '';
    throw err;
  });
  const line = out.split('\n').find((l) => l.trim() !== '');
  if (line === undefined) return null;
  const [state = '', nodes = '', end = '', reason = ''] = line.split('|');
  return { state, nodes, end, reason };
}
