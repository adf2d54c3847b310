/**
 * `orch hosts status`: for every host of a cluster file, its worker as the host sees it (the
 * pid file's process alive and still the one started: same start time) and as Redis sees it
 * (registered pid, version, cards, when it last heartbeat). Hosts are asked in parallel; one
 * that cannot be reached says why and the others still answer.
 */
import type { Logger } from 'pino';
import type { Cluster, Host } from '../../jobs/cluster.ts';
import { OrchError } from '../../jobs/errors.ts';
import { messageOf } from '../../jobs/message-of.ts';
import { differsFrom } from '../../jobs/worker-version.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { connectRedis, readyWithin } from '../../store/connect.ts';
import { orchKeys } from '../../store/keys.ts';
import { workerPaths } from './bring-up.ts';
import { SshHost } from './ssh-host.ts';

export interface HostStatus {
  host: string;
  /** the worker process on the host: pid file, and whether that process still runs */
  process:
    | { state: 'running' | 'stopped' | 'stale'; pid?: number }
    | { state: 'unreachable'; reason: string; hint?: string };
  /** what the worker registered in Redis */
  registered: {
    pid: number | null;
    alive: boolean;
    cards: string[];
    version: string | null;
    version_differs: boolean /** the heartbeat key's remaining life (two beats from the last); null: no heartbeat */;
    alive_expires_in_ms: number | null;
  };
}

export interface HostsStatusOptions {
  file: string;
  cluster: Cluster;
  log: Logger;
  prefix?: string;
  /** this orch's version, to compare with the workers' */
  own: { version: string; commit: string };
}

async function processState(ssh: SshHost, host: Host): Promise<HostStatus['process']> {
  const r = await ssh.exec(
    [
      workerPaths(host),
      '[ -f "$pid" ] || { echo none; exit 0; }',
      'read -r p st <"$pid"',
      // the pid file's process, only while it is the one started (a reused pid is someone else)
      'if [ -n "$st" ] && [ "$(starttime "$p")" = "$st" ] && ! grep -qs \'^State:[[:space:]]*Z\' /proc/"$p"/status; then echo "running $p"; else echo "stale $p"; fi',
    ].join('\n'),
  );
  const m = /^(running|stale) (\d+)$/m.exec(r.stdout);
  if (!m) return { state: 'stopped' };
  return { state: m[1] as 'running' | 'stale', pid: Number(m[2]) };
}

export async function hostsStatus(opts: HostsStatusOptions): Promise<HostStatus[]> {
  const redis = connectRedis(opts.cluster.redis.url, { log: opts.log, name: 'orch-hosts-status' });
  try {
    // Every command below would wait for a reconnect forever: a Redis that never answers is an error.
    await readyWithin(redis, opts.cluster.redis.url, {
      hint: `check redis.url in ${opts.file} and that redis-server is running there`,
    });
    const registry = new CardRegistry(redis, { prefix: opts.prefix });
    const keys = orchKeys(opts.prefix ?? 'orch');
    const all = await registry.all();
    return await Promise.all(
      opts.cluster.hosts.map(async (host, index): Promise<HostStatus> => {
        const info = await registry.hostInfo(host.name);
        const cards = all.filter((c) => c.host === host.name);
        const version = (await redis.hget(keys.host(host.name), 'version')) || null;
        // the alive key lives two heartbeats from the last beat: what is left of it says how fresh that beat is
        const ttl = await redis.pttl(keys.hostAlive(host.name));
        const registered = {
          pid: info.pid,
          alive: info.alive,
          cards: cards.map((c) => c.id),
          version,
          version_differs: info.pid !== null && differsFrom(version ?? undefined, opts.own),
          alive_expires_in_ms: info.alive && ttl > 0 ? ttl : null,
        };
        let ssh: SshHost | undefined;
        try {
          ssh = await SshHost.connect({ file: opts.file, index, host }, opts.log);
          return { host: host.name, process: await processState(ssh, host), registered };
        } catch (err) {
          const reason = messageOf(err);
          return {
            host: host.name,
            process: {
              state: 'unreachable',
              reason,
              ...(err instanceof OrchError && err.hint ? { hint: err.hint } : {}),
            },
            registered,
          };
        } finally {
          ssh?.close();
        }
      }),
    );
  } finally {
    redis.disconnect();
  }
}
