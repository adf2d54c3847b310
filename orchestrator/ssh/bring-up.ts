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
import { messageOf } from '../../jobs/message-of.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { connectRedis, readyWithin } from '../../store/connect.ts';
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
  /** the cluster secret (store/cluster-secret.ts) each worker verifies grants with: sent on stdin to a 0600 file */
  secret?: Buffer;
}

/** A single-quoted shell word; a leading `~/` stays the remote user's home. */
export function shellWord(s: string): string {
  const quote = (t: string) => `'${t.replace(/'/g, `'\\''`)}'`;
  return s.startsWith('~/') ? `"$HOME"/${quote(s.slice(2))}` : quote(s);
}

/** The remote shell's default run dir: $XDG_RUNTIME_DIR/orch, else ~/.orch/run (its expansion, not a template). */
// biome-ignore lint/suspicious/noTemplateCurlyInString: ${XDG_RUNTIME_DIR:+...} is the remote shell's expansion
const DEFAULT_RUN_DIR = 'd=${XDG_RUNTIME_DIR:+$XDG_RUNTIME_DIR/orch}; d=${d:-$HOME/.orch/run}';

/**
 * Shell lines that set $d (the run dir), $pid, $log and $url (the worker's files) on the host.
 * No run_dir in the cluster file: `$XDG_RUNTIME_DIR/orch`, else `~/.orch/run`, resolved there —
 * a per-user directory, never a shared /tmp path another user could prepare (a symlinked log
 * truncating their victim's file, a swapped pid file getting an unrelated process signalled).
 */
export function workerPaths(host: Host): string {
  const base = shellWord(`worker-${host.name}`);
  return [
    host.run_dir !== undefined ? `d=${shellWord(host.run_dir.replace(/\/+$/, '') || '/')}` : DEFAULT_RUN_DIR,
    `pid="$d"/${base}.pid; log="$d"/${base}.log; url="$d"/${base}.redis-url; sec="$d"/${base}.secret`,
    // field 22 of /proc/<pid>/stat (the start time): after "pid (comm) " it is the 20th
    "starttime() { sed 's/^.*) //' /proc/\"$1\"/stat 2>/dev/null | cut -d' ' -f20; }",
  ].join('\n');
}

/** Exit 5 with the reason on stderr unless $d is a real directory of this user that only it may write. */
const CHECK_RUN_DIR = [
  'if [ -L "$d" ] || [ ! -d "$d" ] || [ "$(stat -c %u "$d")" != "$(id -u)" ] || [ $(( 0$(stat -c %a "$d") & 022 )) -ne 0 ]; then',
  '  echo "run_dir $d is not a private directory of $(id -un) (owner uid $(stat -c %u "$d" 2>/dev/null), mode $(stat -c %a "$d" 2>/dev/null)): another user could swap the pid file or symlink the log" >&2; exit 5',
  'fi',
].join('\n');

/**
 * The shell line that starts the worker in the background and prints its pid. The Redis URL
 * (with its password) and the cluster secret arrive on stdin, one line each, and go to 0600
 * files the worker reads with --redis-url-file and --secret-file and then removes: never in a
 * command line, which every user of the host can read in `ps`, nor left for a program of the
 * worker's own user to read (a restart writes them afresh).
 * The log is created afresh with O_EXCL (set -C after rm), so a symlink there is not followed;
 * the pid file records the worker's start time, so `down` signals only that process.
 */
export function startCommand(host: Host, prefix?: string): string {
  const args = ['bin/orch.mjs', 'worker', '--host', host.name];
  // the remote shell has none of this one's environment: the key prefix travels as a flag
  if (prefix !== undefined) args.push('--prefix', prefix);
  if (host.cards) args.push('--cards', host.cards.join(','));
  args.push('--build-dir', host.build_dir);
  if (host.allow_command) args.push('--allow-command');
  if (host.run_as !== undefined) args.push('--run-as', host.run_as);
  const worker = [shellWord(host.node), ...args.map(shellWord)].join(' ');
  return [
    'umask 077',
    workerPaths(host),
    'mkdir -p "$d" || exit 4',
    CHECK_RUN_DIR,
    `cd ${shellWord(host.repo_dir)} || exit 3`,
    'if [ -f "$pid" ]; then read -r p st <"$pid"; if [ -n "$st" ] && [ "$(starttime "$p")" = "$st" ]; then echo "running $p"; exit 0; fi; fi',
    'rm -f "$url" "$sec" "$log" "$pid.new" || exit 6',
    // printf is a shell builtin: neither line is ever an argument another user's ps could see
    '(set -C; IFS= read -r u && printf \'%s\\n\' "$u" >"$url" && cat >"$sec") || exit 6',
    // read once and removed: a program the worker runs as its own user finds no file to read
    `(set -C; exec nohup ${worker} --redis-url-file "$url" --secret-file "$sec" --unlink-credential-files >"$log" 2>&1 </dev/null) &`,
    'p=$!',
    '(set -C; echo "$p $(starttime "$p")" >"$pid.new") && mv -f "$pid.new" "$pid" || exit 6',
    'echo "started $p"',
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
  const r = await ssh.exec(`${workerPaths(host)}\ntail -n 20 "$log" 2>/dev/null`).catch(() => undefined);
  return r ? r.stdout.split('\n').filter(Boolean) : [];
}

/** Alive and not a zombie: an orphaned worker's parent (pid 1 of a container) may never reap it. */
async function isRunning(ssh: SshHost, pid: number): Promise<boolean> {
  return (
    (await ssh.exec(`kill -0 ${pid} 2>/dev/null && ! grep -qs '^State:[[:space:]]*Z' /proc/${pid}/status`)).code === 0
  );
}

function failure(host: Host, err: unknown): HostReport {
  if (err instanceof OrchError)
    return { host: host.name, status: 'failed', reason: err.message, ...(err.hint ? { hint: err.hint } : {}) };
  return { host: host.name, status: 'failed', reason: messageOf(err) };
}

async function eachHost(
  opts: HostsOptions,
  one: (ssh: SshHost, host: Host, registry: CardRegistry) => Promise<HostReport>,
): Promise<HostReport[]> {
  const redis = connectRedis(opts.cluster.redis.url, { log: opts.log, name: 'orch-hosts' });
  try {
    // Every command below would wait for a reconnect forever: a Redis that never answers is an error.
    await readyWithin(redis, opts.cluster.redis.url, {
      hint: `check redis.url in ${opts.file} and that redis-server is running there`,
    });
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
    const r = await ssh.exec(startCommand(host, opts.prefix), {
      stdin: `${opts.cluster.redis.url}\n${opts.secret?.toString('utf8') ?? ''}\n`,
    });
    const m = /^(started|running) (\d+)$/m.exec(r.stdout);
    if (r.code !== 0 || !m) {
      const why =
        r.code === 3
          ? `cannot enter repo_dir ${host.repo_dir}`
          : r.code === 5
            ? 'its run_dir is not private'
            : `the start command exited ${r.code ?? r.signal}`;
      return {
        host: host.name,
        status: 'failed',
        reason: `${why}: ${r.stderr.trim() || r.stdout.trim()}`,
        hint: 'check repo_dir, node and run_dir of this host in the cluster file',
      };
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
      reason: outcome
        ? `the worker (pid ${pid}) exited before registering its cards`
        : `the worker (pid ${pid}) did not register its cards within ${timeoutMs} ms`,
      hint: `read its log on the host: worker-${host.name}.log in ${host.run_dir ?? '$XDG_RUNTIME_DIR/orch (else ~/.orch/run)'}`,
      log: await logTail(ssh, host),
    };
  });
}

export function hostsDown(opts: HostsOptions): Promise<HostReport[]> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return eachHost(opts, async (ssh, host, registry) => {
    // signal only the process the pid file names if it is still the one started (same start
    // time): a pid file from an older format, or a pid since reused, names someone else
    const r = await ssh.exec(
      [
        workerPaths(host),
        '[ -f "$pid" ] || exit 0',
        'read -r p st <"$pid"',
        'if [ -z "$st" ] || [ "$(starttime "$p")" != "$st" ]; then echo "stale $p"; rm -f "$pid"; exit 0; fi',
        'echo "pid $p"; kill -TERM "$p" 2>/dev/null || rm -f "$pid"',
      ].join('\n'),
    );
    const m = /^pid (\d+)$/m.exec(r.stdout);
    if (!m) return { host: host.name, status: 'down' };
    const pid = Number(m[1]);
    const gone = await waitFor(timeoutMs, async () => {
      const alive = (await registry.hostInfo(host.name)).alive;
      return !alive && !(await isRunning(ssh, pid)) ? true : undefined;
    });
    if (gone) {
      await ssh.exec(`${workerPaths(host)}\nrm -f "$pid" "$url" "$sec"`);
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
