/**
 * `orch slurm down`: drain, then cancel. The stop file makes every worker of the job stop
 * gracefully (the rep in flight finishes, the rest of its block is recorded not run, the leases
 * are released, the heartbeat goes); once no host of the job heartbeats, or `waitMs` passed,
 * `scancel` ends the allocation. A Slurm signal instead would reach the ranks mid-rep.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { slurmCommand, squeueJob } from './slurm-commands.ts';
import { jobHosts } from './slurm-status.ts';

export async function slurmDown(redis: Redis, prefix: string, job: string, dir: string, waitMs: number): Promise<{ drained: boolean; cancelled: boolean }> {
  writeFileSync(join(dir, 'stop'), `orch slurm down ${new Date().toISOString()}\n`, { mode: 0o600 });
  const deadline = Date.now() + waitMs;
  let drained = false;
  while (Date.now() < deadline) {
    const hosts = await jobHosts(redis, prefix, job);
    const known = await squeueJob(job);
    // drained: no worker of the job heartbeats; a job still pending has none yet and is just cancelled
    if (hosts.every((h) => !h.alive) && (known === null || known.state !== 'RUNNING' || hosts.length > 0)) {
      drained = true;
      break;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const known = await squeueJob(job);
  if (known === null) return { drained, cancelled: false };
  await slurmCommand('scancel', [job]);
  return { drained, cancelled: true };
}
