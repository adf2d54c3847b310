/**
 * `orch nightly install SUITE | list | remove NAME | run NAME | status [SUITE] | history SUITE`: nightly
 * suites as BullMQ job schedulers on the cluster's Redis (REDIS_URL); `orch serve` runs a suite
 * on its schedule and records each night in the history database (history/: ORCH_DB_URL, else a
 * SQLite file), which status and history read without Redis. install also opens the history
 * database: one that cannot be reached is refused with its URL (password masked) and the fix.
 * install validates the suite and every spec it names first (exit 2, nothing written, when one
 * is invalid, a cron expression BullMQ cannot schedule included) and upserts: installing a
 * suite again replaces its schedule; it signs the suite's schedule, specs and alert sinks with the
 * cluster secret (--secret-file, else the environment), the one `orch serve` verifies each night
 * with. list prints each suite's next run times (jobs/cron.ts). run runs one night of an installed
 * suite now, in this process, against the cluster's orch serve and workers
 * (orchestrator/nightly/run-night-now.ts), and exits with the night's outcome under --fail-on
 * (orchestrator/nightly/night-exit-code.ts).
 */
import { UserInputError } from '../../jobs/errors.ts';
import type { InstalledSuite } from '../../orchestrator/nightly/nightly-suites.ts';
import { defineCommand } from '../command.ts';
import type { RedisUrlArgs } from '../embedded/redis-target.ts';
import { parseFailOn, withFailOn } from '../fail-on.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';
import { jsonLine } from '../terminal/json-line.ts';

/** How many upcoming runs `orch nightly list` shows per suite. */
const NEXT_RUNS = 3;

interface NightlyArgs extends RedisUrlArgs {
  action: 'install' | 'list' | 'remove' | 'run' | 'status' | 'history';
  target?: string;
  every?: number;
  limit: number;
  secretFile?: string;
  submitTokenFile?: string;
  failOn: string[];
}

export const nightlyCommand = defineCommand({
  command: 'nightly <action> [target]',
  describe:
    'nightly suites: install SUITE.yaml | list | remove NAME | run NAME | status [SUITE] | history SUITE (orch serve runs them on schedule; run: one night now)',
  builder: (y) =>
    withFailOn(withRedisUrlFile(y))
      .positional('action', {
        choices: ['install', 'list', 'remove', 'run', 'status', 'history'] as const,
        demandOption: true,
        describe: 'what to do',
      })
      .positional('target', {
        type: 'string',
        describe: 'install: the suite file; remove, run, status, history: the suite name',
      })
      .option('limit', { type: 'number', default: 20, describe: 'status: how many runs; history: how many rows' })
      .option('secret-file', {
        type: 'string',
        describe:
          'install, run: file (mode 0600) holding the cluster secret the suite is signed with (default: $ORCH_CLUSTER_SECRET_FILE, else $ORCH_CLUSTER_SECRET)',
      })
      .option('submit-token-file', {
        type: 'string',
        describe:
          "run: file (mode 0600) holding the cluster's submit token (default: $ORCH_SUBMIT_TOKEN_FILE, else $ORCH_SUBMIT_TOKEN)",
      })
      .option('every', {
        type: 'number',
        hidden: true,
        describe: 'install: run every N ms instead of the cron (tests)',
      }),
  handler: async (argv) => {
    const json = argv.json;
    const out = (s: string) => process.stdout.write(s);
    if (argv.action === 'status' || argv.action === 'history') {
      await showHistory(argv, out);
      return;
    }
    if (argv.action !== 'list' && !argv.target) {
      throw new UserInputError(
        'CLI_USAGE',
        `orch nightly ${argv.action} needs ${argv.action === 'install' ? 'a suite file' : 'a suite name'}`,
        {
          hint:
            argv.action === 'install'
              ? 'orch nightly install configs/nightly.yaml'
              : 'orch nightly list shows the installed names',
        },
      );
    }
    if (argv.action === 'run') return runNightCommand({ ...argv, target: argv.target! }, out);
    // Validation before any connection: an invalid suite or spec exits 2 with file and path.
    if (argv.action === 'install') (await import('../../orchestrator/spec/load-spec.ts')).loadConfigFile(argv.target!);
    // The history database next: a night that could not be recorded would be lost.
    if (argv.action === 'install') await (await (await import('../../history/open-history.ts')).openHistory()).close();
    // The signature orch serve checks each night with: no secret, nothing installed.
    const secret =
      argv.action === 'install'
        ? (await import('../../store/cluster-secret.ts')).requireClusterSecret('orch nightly install', argv.secretFile)
        : undefined;
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { orchLog } = await import('../embedded/log.ts');
    const { requireTarget } = await import('../embedded/redis-target.ts');
    const { NightlySuites } = await import('../../orchestrator/nightly/nightly-suites.ts');
    const { nextCronRuns } = await import('../../jobs/cron.ts');
    const withNext = (s: InstalledSuite) => ({
      ...s,
      next_runs: s.cron !== null ? nextCronRuns(s.cron, s.tz ?? 'UTC', NEXT_RUNS).map((d) => d.toISOString()) : [],
    });
    const target = await requireTarget(`nightly ${argv.action}`, orchLog('nightly'), argv);
    const suites = new NightlySuites(target.redis, target.prefix, secret);
    try {
      if (argv.action === 'install') {
        const s = await suites.install(argv.target!, argv.every !== undefined ? { every: argv.every } : {});
        out(json ? jsonLine(s) : `installed ${describe(s)}\n`);
      } else if (argv.action === 'list') {
        const all = (await suites.list()).map(withNext);
        out(
          json
            ? jsonLine(all)
            : all.length === 0
              ? 'no nightly suites installed\n'
              : all.map((s) => `${describe(s)}\n${s.next_runs.map((t) => `  next run ${t}\n`).join('')}`).join(''),
        );
      } else {
        if (!(await suites.remove(argv.target!))) {
          throw new UserInputError('NO_SUCH_SUITE', `no nightly suite named "${argv.target}" is installed`, {
            hint: 'orch nightly list shows the installed names',
          });
        }
        out(json ? jsonLine({ removed: argv.target }) : `removed ${argv.target}\n`);
      }
    } finally {
      await suites.close();
      await target.close();
    }
  },
});

/** `orch nightly run NAME`: one night now; prints what it ran and exits with the night's outcome. */
async function runNightCommand(
  argv: NightlyArgs & { target: string; json: boolean },
  out: (s: string) => void,
): Promise<number> {
  const failOn = parseFailOn(argv.failOn);
  // the secret and token first: without them nothing would verify or be accepted
  const secret = (await import('../../store/cluster-secret.ts')).requireClusterSecret(
    'orch nightly run',
    argv.secretFile,
  );
  const submitToken = (await import('../../store/submit-token.ts')).requireSubmitToken(
    'orch nightly run',
    argv.submitTokenFile,
  );
  const { orchLog } = await import('../embedded/log.ts');
  const { requireTarget } = await import('../embedded/redis-target.ts');
  const { runNightNow } = await import('../../orchestrator/nightly/run-night-now.ts');
  const { nightExitCode } = await import('../../orchestrator/nightly/night-exit-code.ts');
  const log = orchLog('nightly');
  const target = await requireTarget('nightly run', log, argv);
  try {
    const night = await runNightNow({
      redis: target.redis,
      prefix: target.prefix,
      suite: argv.target,
      secret,
      submitToken,
      log,
    });
    const code = nightExitCode(night.rows, failOn);
    if (argv.json) {
      out(
        jsonLine({
          suite: night.suite,
          run: night.run,
          state: night.state,
          exit_code: code,
          alerts: night.alerts,
          experiments: night.submitted,
          rows: night.rows,
        }),
      );
    } else {
      const { signedPct } = await import('../../orchestrator/stats/format-number.ts');
      out(
        `night ${night.run} of ${night.suite}: ${night.state}, ${night.submitted.length} experiment(s), ${night.alerts} alert(s); exit ${code}\n`,
      );
      for (const r of night.rows) {
        const what = r.experiment_state === 'done' ? `${r.verdict ?? '—'} ${signedPct(r.change)}` : r.experiment_state;
        out(
          `  ${r.spec_name ?? r.spec_file}${r.arm ? ` ${r.arm} vs ${r.reference}` : ''}: ${what}${r.finding ? ` [${r.finding}]` : ''}${r.results_dir ? ` (${r.results_dir})` : ''}\n`,
        );
      }
    }
    return code;
  } finally {
    await target.close();
  }
}

/** status and history read the history database alone: they work while Redis is down. */
async function showHistory(argv: NightlyArgs & { json: boolean }, out: (s: string) => void): Promise<void> {
  if (argv.action === 'history' && !argv.target) {
    throw new UserInputError('CLI_USAGE', 'orch nightly history needs a suite name', {
      hint: 'orch nightly status lists the suites that ran',
    });
  }
  const { openHistory } = await import('../../history/open-history.ts');
  const { renderRuns, renderHistory } = await import('../../orchestrator/nightly/render-history.ts');
  const history = await openHistory();
  try {
    if (argv.action === 'history') {
      const rows = await history.rows(argv.target!, argv.limit);
      out(argv.json ? jsonLine(rows) : renderHistory(argv.target!, rows));
      return;
    }
    const runs = await history.runs(argv.target ?? null, argv.limit);
    const rows = new Map<string, Awaited<ReturnType<typeof history.rows>>>();
    for (const suite of new Set(runs.map((r) => r.suite))) {
      for (const r of await history.rows(suite, argv.limit * 50))
        rows.set(r.run_id, [...(rows.get(r.run_id) ?? []), r]);
    }
    out(argv.json ? jsonLine(runs.map((r) => ({ ...r, rows: rows.get(r.id) ?? [] }))) : renderRuns(runs, rows));
  } finally {
    await history.close();
  }
}

function describe(s: InstalledSuite): string {
  const when = s.cron !== null ? `"${s.cron}" ${s.tz ?? 'UTC'}` : `every ${s.every} ms`;
  const next = s.next ? `, next ${new Date(s.next).toISOString()}` : '';
  return `${s.name}: ${when}${next}, ${s.experiments.length} experiments`;
}
