/**
 * Where `orch slurm up` keeps a job's files: a private directory (0700) per submission under
 * the root (default `~/.cache/orch/slurm`, a home directory the nodes share on most clusters):
 * `redis-url` and `secret` (0600: the workers read them), `job.sbatch`, `stop` (written to drain),
 * `slurm-<job>.out`, and `job.json`, the record `status` and `down` find the job by; `last` in the
 * root names the latest submission's directory.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { UserInputError } from '../../jobs/errors.ts';
import { parseStored } from '../../jobs/parse-stored.ts';
import { ensurePrivateDir } from '../../store/private-dir.ts';

export const SlurmJobRecordSchema = z.object({
  job: z.string().min(1),
  prefix: z.string(),
  nodes: z.number().int().positive(),
  gpus_per_node: z.number().int().nonnegative(),
  time: z.string(),
  submitted: z.string(),
});
export type SlurmJobRecord = z.infer<typeof SlurmJobRecordSchema>;

export function defaultSlurmRoot(): string {
  return join(homedir(), '.cache', 'orch', 'slurm');
}

/** A fresh private directory for one submission. */
export function newRunDir(root: string): string {
  ensurePrivateDir(root, 'the orch slurm directory');
  const name = `run-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`;
  return ensurePrivateDir(join(root, name), 'the job directory');
}

/** Writes a file only its owner can read (the credentials the workers read). */
export function writePrivate(path: string, text: string): void {
  writeFileSync(path, text, { mode: 0o600, flag: 'wx' });
}

export function recordJob(root: string, dir: string, rec: SlurmJobRecord): void {
  writeFileSync(join(dir, 'job.json'), JSON.stringify(rec, null, 2) + '\n', { mode: 0o600 });
  writeFileSync(join(root, 'last'), dir + '\n', { mode: 0o600 });
}

/** The directory and record of `job`, or of the latest submission. */
export function findJob(root: string, job?: string): { dir: string; rec: SlurmJobRecord } {
  const read = (dir: string) => ({ dir, rec: parseStored(SlurmJobRecordSchema, readFileSync(join(dir, 'job.json'), 'utf8'), join(dir, 'job.json')) });
  const hint = 'start workers with orch slurm up, or pass --job with the id it printed (and --run-dir if you gave it one)';
  if (job === undefined) {
    const last = join(root, 'last');
    if (!existsSync(last)) throw new UserInputError('SLURM_NO_JOB', `no orch slurm up job is recorded under ${root}`, { hint });
    return read(readFileSync(last, 'utf8').trim());
  }
  const dirs = existsSync(root) ? readdirSync(root).map((n) => join(root, n)).filter((d) => existsSync(join(d, 'job.json'))) : [];
  const found = dirs.map(read).find((r) => r.rec.job === job);
  if (!found) throw new UserInputError('SLURM_NO_JOB', `job ${job}: no orch slurm up record under ${root}`, { hint });
  return found;
}
