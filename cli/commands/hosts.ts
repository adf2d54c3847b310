/**
 * `orch hosts up|down|status|trust CLUSTER.yaml [HOST]`: start (or stop) `orch worker` on every
 * host of a cluster file over SSH (orchestrator/ssh/bring-up.ts), show each host's worker
 * (host-status.ts), or trust a host's ssh key after showing its fingerprint (trust.ts). Prints
 * one line per host; exit 2 when any host failed, with the reason and the fix.
 */
import { SpecError, UserInputError } from '../../jobs/errors.ts';
import type { HostReport } from '../../orchestrator/ssh/bring-up.ts';
import type { HostStatus } from '../../orchestrator/ssh/host-status.ts';
import type { TrustReport } from '../../orchestrator/ssh/trust.ts';
import { defineCommand } from '../command.ts';
import { jsonLine } from '../terminal/json-line.ts';

function line(r: HostReport): string {
  if (r.status === 'up') return `${r.host}: up (pid ${r.pid}) cards ${r.cards?.join(', ') || '(none)'}\n`;
  if (r.status === 'down') return `${r.host}: down${r.pid ? ` (pid ${r.pid} stopped)` : ' (was not running)'}\n`;
  const log = r.log?.length ? `\n  last log lines:\n${r.log.map((l) => `    ${l}`).join('\n')}` : '';
  return `${r.host}: failed: ${r.reason}${r.hint ? `\n  fix: ${r.hint}` : ''}${log}\n`;
}

function statusLine(s: HostStatus): string {
  const p = s.process;
  const proc =
    p.state === 'unreachable'
      ? `unreachable: ${p.reason}${p.hint ? `\n  fix: ${p.hint}` : ''}`
      : p.state === 'running'
        ? `worker running (pid ${p.pid})`
        : p.state === 'stale'
          ? `worker not running (the pid file names ${p.pid}, which is gone or another process)`
          : 'worker not running (no pid file)';
  const r = s.registered;
  const beat =
    r.alive_expires_in_ms !== null
      ? `heartbeat alive (expires in ${(r.alive_expires_in_ms / 1000).toFixed(1)} s)`
      : 'no heartbeat';
  const version = r.version
    ? `version ${r.version}${r.version_differs ? ' (DIFFERS from this orch)' : ''}`
    : r.pid !== null
      ? 'version unknown (an older worker)'
      : 'never registered';
  return `${s.host}: ${proc}; ${beat}; ${version}; cards ${r.cards.join(', ') || '(none)'}\n`;
}

function trustLine(t: TrustReport): string {
  const key = t.fingerprint ? ` ${t.name} ${t.fingerprint}` : '';
  if (t.status === 'added') return `${t.host}: trusted${key} (added to ${t.added_to?.join(', ')})\n`;
  if (t.status === 'already-trusted') return `${t.host}: already trusted${key}\n`;
  if (t.status === 'declined') return `${t.host}: not trusted${key} (declined)\n`;
  return `${t.host}: failed: ${t.reason}${t.hint ? `\n  fix: ${t.hint}` : ''}\n`;
}

/** Asks on the terminal; without one (a script, CI) the answer is no: --yes is the way to say yes there. */
async function confirmOnTerminal(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) {
    process.stderr.write(
      `${question} no terminal to ask on: not trusted (check the fingerprint, then run again with --yes)\n`,
    );
    return false;
  }
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

export const hostsCommand = defineCommand({
  command: 'hosts <action> <file> [host]',
  describe:
    'start (up), stop (down) or show (status) orch worker on every host of a cluster file over ssh, or trust a host key (trust)',
  builder: (y) =>
    y
      .positional('action', {
        choices: ['up', 'down', 'status', 'trust'] as const,
        demandOption: true,
        describe:
          "up: start the workers; down: stop them; status: each host's worker, version, cards, heartbeat; trust: show a host's key fingerprint and add it to ~/.ssh/known_hosts",
      })
      .positional('file', { type: 'string', demandOption: true, describe: 'cluster file (kind: cluster)' })
      .positional('host', { type: 'string', describe: 'trust: only this host of the cluster file (default: all)' })
      .option('yes', {
        type: 'boolean',
        default: false,
        describe:
          'trust: add unknown keys without asking (check their fingerprints first); a changed key is never added',
      })
      .option('timeout', {
        type: 'number',
        default: 60,
        describe: 'seconds a worker may take to register (up) or to drain and exit (down)',
      }),
  handler: async (argv) => {
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { loadConfigFile } = await import('../../orchestrator/spec/load-spec.ts');
    const { orchLog } = await import('../embedded/log.ts');
    const { prefixFromEnv } = await import('../embedded/redis-target.ts');
    const { hostsDown, hostsUp } = await import('../../orchestrator/ssh/bring-up.ts');
    const loaded = loadConfigFile(argv.file);
    if (loaded.kind !== 'cluster') {
      throw new SpecError([
        {
          file: argv.file,
          line: 1,
          path: 'kind',
          message: `this is a ${loaded.kind} file, not a cluster file`,
          fix: 'pass a file with kind: cluster',
        },
      ]);
    }
    const opts = {
      file: argv.file,
      cluster: loaded.cluster,
      log: orchLog('hosts'),
      timeoutMs: argv.timeout * 1000,
      prefix: prefixFromEnv(),
    };
    if (argv.action === 'status') {
      const { hostsStatus } = await import('../../orchestrator/ssh/host-status.ts');
      const { orchVersion } = await import('../version.ts');
      const hosts = await hostsStatus({ ...opts, own: orchVersion() });
      process.stdout.write(argv.json ? jsonLine({ action: 'status', hosts }) : hosts.map(statusLine).join(''));
      return;
    }
    if (argv.action === 'trust') {
      const { trustHosts } = await import('../../orchestrator/ssh/trust.ts');
      const hosts = await trustHosts({
        ...opts,
        ...(argv.host ? { only: argv.host } : {}),
        confirm: argv.yes ? async () => true : confirmOnTerminal,
        say: (l) => process.stderr.write(`${l}\n`),
      });
      process.stdout.write(argv.json ? jsonLine({ action: 'trust', hosts }) : hosts.map(trustLine).join(''));
      const bad = hosts.filter((h) => h.status === 'failed' || h.status === 'declined');
      if (bad.length > 0) {
        throw new UserInputError(
          'HOSTS_FAILED',
          `orch hosts trust: ${bad.length} of ${hosts.length} host key(s) not trusted: ${bad.map((h) => `${h.host}: ${h.reason ?? h.status}`).join('; ')}`,
          {
            hint: bad.find((h) => h.hint)?.hint ?? 'check the fingerprints, then run again with --yes',
          },
        );
      }
      return;
    }
    // the workers verify every grant with the cluster secret the scheduler signs with: up hands this one's to them
    const { requireClusterSecret } = await import('../../store/cluster-secret.ts');
    const reports =
      argv.action === 'up'
        ? await hostsUp({ ...opts, secret: requireClusterSecret('orch hosts up') })
        : await hostsDown(opts);
    process.stdout.write(argv.json ? jsonLine({ action: argv.action, hosts: reports }) : reports.map(line).join(''));
    const failed = reports.filter((r) => r.status === 'failed');
    if (failed.length > 0) {
      throw new UserInputError(
        'HOSTS_FAILED',
        `orch hosts ${argv.action}: ${failed.length} of ${reports.length} host(s) failed: ${failed.map((r) => `${r.host}: ${r.reason}`).join('; ')}`,
        {
          hint: failed[0]?.hint ?? 'see the lines above',
        },
      );
    }
  },
});
