/**
 * `orch slurm down`: drain, then cancel. The stop file makes every worker of the job stop
 * gracefully (the rep in flight finishes, the rest of its block is recorded not run, the leases
 * are released, the heartbeat goes); once no host of the job heartbeats, or `waitMs` passed,
 * `scancel` ends the allocation if it did not end with its workers. A Slurm signal instead would
 * reach the ranks mid-rep.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { slurmCommand, squeueJob } from './slurm-commands.ts';
import { jobHosts } from './slurm-status.ts';

export async function slurmDown(
  redis: Redis,
  prefix: string,
  job: string,
  dir: string,
  waitMs: number,
): Promise<{ drained: boolean; cancelled: boolean }> {
  writeFileSync(join(dir, 'stop'), `orch slurm down ${new Date().toISOString()}\n`, { mode: 0o600 });
  const deadline = Date.now() + waitMs;
  const pause = () => new Promise((r) => setTimeout(r, 250));
  let drained = false;
  while (!drained && Date.now() < deadline) {
    const [hosts, known] = await Promise.all([jobHosts(redis, prefix, job), squeueJob(job)]);
    // drained: no worker of the job heartbeats; a job still pending has none yet and is just cancelled
    drained = hosts.every((h) => !h.alive) && (known === null || known.state !== 'RUNNING' || hosts.length > 0);
    if (!drained) await pause();
  }
  // drained workers exit and the batch script ends with them: the job ends on its own
  while (drained && Date.now() < deadline && (await squeueJob(job))?.state === 'RUNNING') await pause();
  const known = await squeueJob(job);
  if (known === null || !/^(RUNNING|PENDING|SUSPENDED|CONFIGURING)$/.test(known.state))
    return { drained, cancelled: false };
  await slurmCommand('scancel', [job]);
  return { drained, cancelled: true };
}
