/**
 * `orch nightly install SUITE | list | remove NAME`: nightly suites as BullMQ job schedulers on
 * the cluster's Redis (REDIS_URL); `orch serve` submits a suite's experiments on its schedule.
 * install validates the suite and every spec it names first (exit 2, nothing written, when one
 * is invalid, a cron expression BullMQ cannot schedule included) and upserts: installing a
 * suite again replaces its schedule. list prints each suite's next run times (jobs/cron.ts).
 */
import { UserInputError } from '../../jobs/errors.ts';
import type { InstalledSuite } from '../../orchestrator/nightly/nightly-suites.ts';
import { defineCommand } from '../command.ts';

/** How many upcoming runs `orch nightly list` shows per suite. */
const NEXT_RUNS = 3;

interface NightlyArgs {
  action: 'install' | 'list' | 'remove';
  target?: string;
  every?: number;
}

export const nightlyCommand = defineCommand<NightlyArgs>({
  command: 'nightly <action> [target]',
  describe: 'nightly suites: install SUITE.yaml | list | remove NAME (orch serve submits them on schedule)',
  builder: (y) =>
    y
      .positional('action', { choices: ['install', 'list', 'remove'] as const, demandOption: true, describe: 'what to do' })
      .positional('target', { type: 'string', describe: 'install: the suite file; remove: the suite name' })
      .option('every', { type: 'number', hidden: true, describe: 'install: run every N ms instead of the cron (tests)' }) as never,
  handler: async (argv) => {
    const json = argv.json;
    const out = (s: string) => process.stdout.write(s);
    if (argv.action !== 'list' && !argv.target) {
      throw new UserInputError('CLI_USAGE', `orch nightly ${argv.action} needs ${argv.action === 'install' ? 'a suite file' : 'a suite name'}`, {
        hint: argv.action === 'install' ? 'orch nightly install configs/nightly.yaml' : 'orch nightly list shows the installed names',
      });
    }
    // Validation before any connection: an invalid suite or spec exits 2 with file and path.
    if (argv.action === 'install') (await import('../../jobs/load-spec.ts')).loadConfigFile(argv.target!);
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { orchLog } = await import('../embedded/log.ts');
    const { requireTarget } = await import('../embedded/redis-target.ts');
    const { NightlySuites } = await import('../../orchestrator/nightly/nightly-suites.ts');
    const { nextCronRuns } = await import('../../jobs/cron.ts');
    const withNext = (s: InstalledSuite) => ({ ...s, next_runs: s.cron !== null ? nextCronRuns(s.cron, s.tz ?? 'UTC', NEXT_RUNS).map((d) => d.toISOString()) : [] });
    const target = await requireTarget(`nightly ${argv.action}`, orchLog('nightly'));
    const suites = new NightlySuites(target.redis, target.prefix);
    try {
      if (argv.action === 'install') {
        const s = await suites.install(argv.target!, argv.every !== undefined ? { every: argv.every } : {});
        out(json ? `${JSON.stringify(s)}\n` : `installed ${describe(s)}\n`);
      } else if (argv.action === 'list') {
        const all = (await suites.list()).map(withNext);
        out(json ? `${JSON.stringify(all)}\n` : all.length === 0 ? 'no nightly suites installed\n' : all.map((s) => `${describe(s)}\n${s.next_runs.map((t) => `  next run ${t}\n`).join('')}`).join(''));
      } else {
        if (!(await suites.remove(argv.target!))) {
          throw new UserInputError('NO_SUCH_SUITE', `no nightly suite named "${argv.target}" is installed`, { hint: 'orch nightly list shows the installed names' });
        }
        out(json ? `${JSON.stringify({ removed: argv.target })}\n` : `removed ${argv.target}\n`);
      }
    } finally {
      await suites.close();
      await target.close();
    }
  },
});

function describe(s: InstalledSuite): string {
  const when = s.cron !== null ? `"${s.cron}" ${s.tz ?? 'UTC'}` : `every ${s.every} ms`;
  const next = s.next ? `, next ${new Date(s.next).toISOString()}` : '';
  return `${s.name}: ${when}${next}, ${s.experiments.length} experiments`;
}
