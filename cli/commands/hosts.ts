/**
 * `orch hosts up|down CLUSTER.yaml`: start (or stop) `orch worker` on every host of a cluster
 * file over SSH (orchestrator/ssh/bring-up.ts). Prints one line per host; exit 2 when any
 * host failed, with the reason and the fix.
 */
import { SpecError, UserInputError } from '../../jobs/errors.ts';
import type { HostReport } from '../../orchestrator/ssh/bring-up.ts';
import { defineCommand } from '../command.ts';

interface HostsArgs {
  action: 'up' | 'down';
  file: string;
  timeout: number;
}

function line(r: HostReport): string {
  if (r.status === 'up') return `${r.host}: up (pid ${r.pid}) cards ${r.cards?.join(', ') || '(none)'}\n`;
  if (r.status === 'down') return `${r.host}: down${r.pid ? ` (pid ${r.pid} stopped)` : ' (was not running)'}\n`;
  const log = r.log?.length ? `\n  last log lines:\n${r.log.map((l) => `    ${l}`).join('\n')}` : '';
  return `${r.host}: failed: ${r.reason}${r.hint ? `\n  fix: ${r.hint}` : ''}${log}\n`;
}

export const hostsCommand = defineCommand<HostsArgs>({
  command: 'hosts <action> <file>',
  describe: "start (up) or stop (down) orch worker on every host of a cluster file, over ssh",
  builder: (y) =>
    y
      .positional('action', { choices: ['up', 'down'] as const, demandOption: true, describe: 'up: start the workers; down: stop them' })
      .positional('file', { type: 'string', demandOption: true, describe: 'cluster file (kind: cluster)' })
      .option('timeout', { type: 'number', default: 60, describe: 'seconds a worker may take to register (up) or to drain and exit (down)' }) as never,
  handler: async (argv) => {
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { loadConfigFile } = await import('../../jobs/load-spec.ts');
    const { orchLog } = await import('../embedded/log.ts');
    const { prefixFromEnv } = await import('../embedded/redis-target.ts');
    const { hostsDown, hostsUp } = await import('../../orchestrator/ssh/bring-up.ts');
    const loaded = loadConfigFile(argv.file);
    if (loaded.kind !== 'cluster') {
      throw new SpecError([{ file: argv.file, line: 1, path: 'kind', message: `this is a ${loaded.kind} file, not a cluster file`, fix: 'pass a file with kind: cluster' }]);
    }
    const opts = { file: argv.file, cluster: loaded.cluster, log: orchLog('hosts'), timeoutMs: argv.timeout * 1000, prefix: prefixFromEnv() };
    const reports = argv.action === 'up' ? await hostsUp(opts) : await hostsDown(opts);
    process.stdout.write(argv.json ? `${JSON.stringify({ action: argv.action, hosts: reports })}\n` : reports.map(line).join(''));
    const failed = reports.filter((r) => r.status === 'failed');
    if (failed.length > 0) {
      throw new UserInputError('HOSTS_FAILED', `orch hosts ${argv.action}: ${failed.length} of ${reports.length} host(s) failed: ${failed.map((r) => `${r.host}: ${r.reason}`).join('; ')}`, {
        hint: failed[0]?.hint ?? 'see the lines above',
      });
    }
  },
});
