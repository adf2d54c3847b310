/**
 * `orch slurm status`: the job as Slurm sees it (state, nodes, end, pending reason) and the hosts
 * its workers registered in Redis (their cards, heartbeat, the allocation they name).
 */
import type { Redis } from 'ioredis';
import { CardRegistry, type HostInfo } from '../../store/card-registry.ts';
import { squeueJob } from './slurm-commands.ts';

export interface SlurmStatus {
  job: string;
  /** null: Slurm no longer knows the job (it ended a while ago) */
  slurm: { state: string; nodes: string; end: string; reason: string } | null;
  hosts: HostInfo[];
}

/** The hosts whose worker registered this Slurm job as its allocation. */
export async function jobHosts(redis: Redis, prefix: string, job: string): Promise<HostInfo[]> {
  const registry = new CardRegistry(redis, { prefix });
  const names = [...new Set((await registry.all()).map((c) => c.host))].sort();
  const infos = await Promise.all(names.map((h) => registry.hostInfo(h)));
  return infos.filter((h) => h.slurm?.job === job);
}

export async function slurmStatus(redis: Redis, prefix: string, job: string): Promise<SlurmStatus> {
  const [slurm, hosts] = await Promise.all([squeueJob(job), jobHosts(redis, prefix, job)]);
  return { job, slurm, hosts };
}

export function renderSlurmStatus(s: SlurmStatus): string {
  const head =
    s.slurm === null
      ? `job ${s.job}: not known to Slurm any more (ended)`
      : `job ${s.job}: ${s.slurm.state}${s.slurm.nodes ? ` on ${s.slurm.nodes}` : ''}${s.slurm.end && s.slurm.end !== 'N/A' ? `, ends ${s.slurm.end}` : ''}${s.slurm.state === 'PENDING' ? ` (${s.slurm.reason})` : ''}`;
  const hosts = s.hosts.map(
    (h) =>
      `  ${h.host}: ${h.alive ? 'heartbeat alive' : 'no heartbeat'}; cards ${h.cards.join(', ') || '(none)'}${h.slurm ? `; node ${h.slurm.node}, partition ${h.slurm.partition || '-'}` : ''}`,
  );
  return `${[head, ...(hosts.length > 0 ? hosts : ['  no worker registered yet'])].join('\n')}\n`;
}
