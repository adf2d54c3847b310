/**
 * Where `orch slurm up` keeps a job's files: a private directory (0700) per submission under
 * the root (default `~/.cache/orch/slurm`, a home directory the nodes share on most clusters):
 * `redis-url.<task>` and `secret.<task>` (0600: one copy per worker, each read once by the worker
 * of that Slurm task and unlinked by it, so no credential stays in a plain file once the workers
 * started; batch-script.ts), `job.sbatch`, `stop` (written to drain), `slurm-<job>.out`, and
 * `job.json`, the record `status` and `down` find the job by; `last` in the root names the latest
 * submission's directory. `orch slurm down` removes the directory (removeRunDir).
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/** The credential files of the worker of Slurm task `task` (its SLURM_PROCID). */
export function credentialFiles(dir: string, task: number | string): { redisUrl: string; secret: string } {
  return { redisUrl: join(dir, `redis-url.${task}`), secret: join(dir, `secret.${task}`) };
}

/** One copy of the Redis URL and the secret per task (one task per node): each worker unlinks its own. */
export function writeCredentials(dir: string, tasks: number, redisUrl: string, secret: Buffer): void {
  for (let t = 0; t < tasks; t++) {
    const f = credentialFiles(dir, t);
    writePrivate(f.redisUrl, `${redisUrl}\n`);
    writePrivate(f.secret, `${secret.toString('utf8')}\n`);
  }
}

/**
 * Removes a job's directory (`orch slurm down`, once the job drained or was cancelled): a
 * credential copy a worker never read (it failed before) goes with it. `last` goes too when it
 * names this directory.
 */
export function removeRunDir(root: string, dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  const last = join(root, 'last');
  if (existsSync(last) && readFileSync(last, 'utf8').trim() === dir) rmSync(last, { force: true });
}

export function recordJob(root: string, dir: string, rec: SlurmJobRecord): void {
  writeFileSync(join(dir, 'job.json'), `${JSON.stringify(rec, null, 2)}\n`, { mode: 0o600 });
  writeFileSync(join(root, 'last'), `${dir}\n`, { mode: 0o600 });
}

/** The directory and record of `job`, or of the latest submission. */
export function findJob(root: string, job?: string): { dir: string; rec: SlurmJobRecord } {
  const read = (dir: string) => ({
    dir,
    rec: parseStored(SlurmJobRecordSchema, readFileSync(join(dir, 'job.json'), 'utf8'), join(dir, 'job.json')),
  });
  const hint =
    'start workers with orch slurm up, or pass --job with the id it printed (and --run-dir if you gave it one)';
  if (job === undefined) {
    const last = join(root, 'last');
    if (!existsSync(last))
      throw new UserInputError('SLURM_NO_JOB', `no orch slurm up job is recorded under ${root}`, { hint });
    return read(readFileSync(last, 'utf8').trim());
  }
  const dirs = existsSync(root)
    ? readdirSync(root)
        .map((n) => join(root, n))
        .filter((d) => existsSync(join(d, 'job.json')))
    : [];
  const found = dirs.map(read).find((r) => r.rec.job === job);
  if (!found) throw new UserInputError('SLURM_NO_JOB', `job ${job}: no orch slurm up record under ${root}`, { hint });
  return found;
}
