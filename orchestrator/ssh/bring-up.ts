/**
 * `orch hosts up|down`: start `orch worker` on every host of a cluster file over SSH, in the
 * background (nohup, pid file and log in the host's run_dir), and check that it registered its
 * cards in the cluster's Redis; stop it with SIGTERM (the worker drains gracefully) and wait
 * until its heartbeat is gone and the process has exited. Hosts are handled in parallel; each
 * gets its own report line, a failure carries its reason and the last lines of the worker log.
 */
import type { Logger } from 'pino';
import type { Cluster, Host } from '../../jobs/cluster.ts';
import { OrchError } from '../../jobs/errors.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { connectRedis } from '../../store/connect.ts';
import { SshHost } from './ssh-host.ts';

export interface HostReport {
  host: string;
  status: 'up' | 'down' | 'failed';
  pid?: number;
  cards?: string[];
  reason?: string;
  hint?: string;
  /** the last lines of the worker's log on the host, on failure */
  log?: string[];
}

export interface HostsOptions {
  file: string;
  cluster: Cluster;
  log: Logger;
  /** how long a worker may take to register (up) or to drain and exit (down) */
  timeoutMs?: number;
  prefix?: string;
}

/** A single-quoted shell word; a leading `~/` stays the remote user's home. */
export function shellWord(s: string): string {
  const quote = (t: string) => `'${t.replace(/'/g, `'\\''`)}'`;
  return s.startsWith('~/') ? `"$HOME"/${quote(s.slice(2))}` : quote(s);
}

function paths(host: Host) {
  const base = `${host.run_dir.replace(/\/+$/, '')}/worker-${host.name}`;
  return { run: shellWord(host.run_dir), pid: shellWord(`${base}.pid`), log: shellWord(`${base}.log`) };
}

/** The shell line that starts the worker in the background and prints its pid. */
export function startCommand(host: Host, redisUrl: string, prefix?: string): string {
  const p = paths(host);
  const args = ['bin/orch.mjs', 'worker', '--host', host.name];
  // the remote shell has none of this one's environment: the key prefix travels as a flag
  if (prefix !== undefined) args.push('--prefix', prefix);
  if (host.cards) args.push('--cards', host.cards.join(','));
  args.push('--build-dir', host.build_dir);
  const worker = [shellWord(host.node), ...args.map(shellWord)].join(' ');
  return [
    `mkdir -p ${p.run} && cd ${shellWord(host.repo_dir)} || exit 3`,
    `if [ -f ${p.pid} ] && kill -0 "$(cat ${p.pid})" 2>/dev/null; then echo "running $(cat ${p.pid})"; exit 0; fi`,
    `REDIS_URL=${shellWord(redisUrl)} nohup ${worker} >${p.log} 2>&1 </dev/null &`,
    `echo $! >${p.pid}; echo "started $!"`,
  ].join('\n');
}

async function waitFor<T>(timeoutMs: number, what: () => Promise<T | undefined>): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await what();
    if (v !== undefined || Date.now() >= deadline) return v;
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function logTail(ssh: SshHost, host: Host): Promise<string[]> {
  const r = await ssh.exec(`tail -n 20 ${paths(host).log} 2>/dev/null`).catch(() => undefined);
  return r ? r.stdout.split('\n').filter(Boolean) : [];
}

/** Alive and not a zombie: an orphaned worker's parent (pid 1 of a container) may never reap it. */
async function isRunning(ssh: SshHost, pid: number): Promise<boolean> {
  return (await ssh.exec(`kill -0 ${pid} 2>/dev/null && ! grep -qs '^State:[[:space:]]*Z' /proc/${pid}/status`)).code === 0;
}

function failure(host: Host, err: unknown): HostReport {
  if (err instanceof OrchError) return { host: host.name, status: 'failed', reason: err.message, ...(err.hint ? { hint: err.hint } : {}) };
  return { host: host.name, status: 'failed', reason: err instanceof Error ? err.message : String(err) };
}

async function eachHost(opts: HostsOptions, one: (ssh: SshHost, host: Host, registry: CardRegistry) => Promise<HostReport>): Promise<HostReport[]> {
  const redis = connectRedis(opts.cluster.redis.url, { log: opts.log, name: 'orch-hosts' });
  try {
    const registry = new CardRegistry(redis, { prefix: opts.prefix });
    return await Promise.all(
      opts.cluster.hosts.map(async (host, index) => {
        let ssh: SshHost | undefined;
        try {
          ssh = await SshHost.connect({ file: opts.file, index, host }, opts.log);
          return await one(ssh, host, registry);
        } catch (err) {
          return failure(host, err);
        } finally {
          ssh?.close();
        }
      }),
    );
  } finally {
    redis.disconnect();
  }
}

export function hostsUp(opts: HostsOptions): Promise<HostReport[]> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return eachHost(opts, async (ssh, host, registry) => {
    const r = await ssh.exec(startCommand(host, opts.cluster.redis.url, opts.prefix));
    const m = /^(started|running) (\d+)$/m.exec(r.stdout);
    if (r.code !== 0 || !m) {
      const why = r.code === 3 ? `cannot enter repo_dir ${host.repo_dir}` : `the start command exited ${r.code ?? r.signal}`;
      return { host: host.name, status: 'failed', reason: `${why}: ${r.stderr.trim() || r.stdout.trim()}`, hint: 'check repo_dir, node and run_dir of this host in the cluster file' };
    }
    const pid = Number(m[2]);
    const outcome = await waitFor(timeoutMs, async () => {
      const info = await registry.hostInfo(host.name);
      if (info.alive && info.pid === pid) return { cards: (await registry.liveCards(host.name)).map((c) => c.id) };
      if (!(await isRunning(ssh, pid))) return { exited: true };
      return undefined;
    });
    if (outcome && 'cards' in outcome) return { host: host.name, status: 'up', pid, cards: outcome.cards };
    return {
      host: host.name,
      status: 'failed',
      pid,
      reason: outcome ? `the worker (pid ${pid}) exited before registering its cards` : `the worker (pid ${pid}) did not register its cards within ${timeoutMs} ms`,
      hint: `read its log on the host: ${paths(host).log}`,
      log: await logTail(ssh, host),
    };
  });
}

export function hostsDown(opts: HostsOptions): Promise<HostReport[]> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return eachHost(opts, async (ssh, host, registry) => {
    const p = paths(host);
    const r = await ssh.exec(`[ -f ${p.pid} ] || exit 0; pid=$(cat ${p.pid}); echo "pid $pid"; kill -TERM "$pid" 2>/dev/null || rm -f ${p.pid}`);
    const m = /^pid (\d+)$/m.exec(r.stdout);
    if (!m) return { host: host.name, status: 'down' };
    const pid = Number(m[1]);
    const gone = await waitFor(timeoutMs, async () => {
      const alive = (await registry.hostInfo(host.name)).alive;
      return !alive && !(await isRunning(ssh, pid)) ? true : undefined;
    });
    if (gone) {
      await ssh.exec(`rm -f ${p.pid}`);
      return { host: host.name, status: 'down', pid };
    }
    return {
      host: host.name,
      status: 'failed',
      pid,
      reason: `the worker (pid ${pid}) still runs or heartbeats ${timeoutMs} ms after SIGTERM`,
      hint: `a rep in flight may still be finishing; run orch hosts down again, or kill -KILL ${pid} on the host`,
      log: await logTail(ssh, host),
    };
  });
}
