/**
 * `orch status [ID]`: the leader, queues, cards and who holds them, experiments with their
 * outcome once ended (verdict, change, CI, duration) and blocks waiting and why, failed and
 * stalled nightly runs. `--state`, `--verdict` and `--name` filter the experiments.
 */
import { UserInputError } from '../../jobs/errors.ts';
import type { ExperimentFilter } from '../../orchestrator/experiment/experiment-filter.ts';
import { OUTCOMES, type Outcome } from '../../orchestrator/experiment/outcome-codes.ts';
import type { ExperimentState } from '../../store/experiment-store.ts';
import { defineCommand } from '../command.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';
import { jsonLine } from '../terminal/json-line.ts';

export const statusCommand = defineCommand({
  command: 'status [id]',
  describe: 'show the scheduler, queues, cards and their holders, experiments and why blocks wait',
  builder: (y) =>
    withRedisUrlFile(y)
      .positional('id', { type: 'string', describe: 'one experiment' })
      .option('all', { type: 'boolean', default: false, describe: 'include experiments that ended over an hour ago' })
      .option('limit', {
        type: 'number',
        default: 20,
        describe: 'experiments shown, oldest first (the counts per state cover all of them)',
      })
      .option('state', {
        type: 'string',
        describe: 'only experiments in this state (queued, running, done, …: the states orch status counts)',
      })
      .option('verdict', {
        type: 'string',
        describe: `only ended experiments with this outcome (${OUTCOMES.join(', ')}); with --all for those ended over an hour ago`,
      })
      .option('name', { type: 'string', describe: 'only experiments whose name or id contains this' }),
  handler: async (argv) => {
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { clusterStatus, renderStatus } = await import('../../orchestrator/experiment/cluster-status.ts');
    const { orchLog } = await import('../embedded/log.ts');
    const { requireTarget } = await import('../embedded/redis-target.ts');
    const { formatBuildState, readBuildState } = await import('../../store/build-state.ts');
    const { nightlyTrouble, renderNightlyTrouble } = await import('../../orchestrator/nightly/nightly-trouble.ts');
    const { orchVersion } = await import('../version.ts');
    if (!Number.isInteger(argv.limit) || argv.limit < 1 || argv.limit > 100_000) {
      throw new UserInputError('CLI_USAGE', `orch status --limit ${argv.limit}: not a whole number from 1 to 100000`, {
        hint: 'orch status --limit 50 (the counts per state always cover every experiment)',
      });
    }
    const { filterProblem } = await import('../../orchestrator/experiment/experiment-filter.ts');
    const problem = filterProblem('state', argv.state) ?? filterProblem('verdict', argv.verdict);
    if (problem)
      throw new UserInputError('CLI_USAGE', `orch status: ${problem}`, {
        hint: 'orch status --state done --verdict slower',
      });
    const filter: ExperimentFilter = {
      ...(argv.state ? { state: argv.state as ExperimentState } : {}),
      ...(argv.verdict ? { outcome: argv.verdict as Outcome } : {}),
      ...(argv.name ? { name: argv.name } : {}),
    };
    const target = await requireTarget('status', orchLog('status'), argv);
    try {
      const s = await clusterStatus(target.redis, target.prefix, {
        ...(argv.id ? { experiment: argv.id } : {}),
        all: argv.all,
        limit: argv.limit,
        own: orchVersion(),
        filter,
        outcomes: true,
      });
      if (argv.id && s.experiments.length === 0) {
        throw new UserInputError('NO_SUCH_EXPERIMENT', `no experiment "${argv.id}" in this Redis`, {
          hint: 'run orch status to list experiments',
        });
      }
      // The build locks of the hosts: holder, since when, similar builds' durations, waiters.
      const builds = await readBuildState(target.redis, { prefix: target.prefix });
      const buildLines = builds.length === 0 ? [] : ['', 'builds', ...formatBuildState(builds).map((l) => `  ${l}`)];
      // Failed and stalled nightly runs of the last week, from the history database.
      const nightly = await nightlyTrouble();
      const nightlyLines = renderNightlyTrouble(nightly);
      // Jobs the workers and orch serve refused before anything ran (unsigned, altered, replayed).
      const { RefusedJobs } = await import('../../store/refused-jobs.ts');
      const refused = await new RefusedJobs(target.redis, target.prefix).counts();
      const refusedLines =
        Object.keys(refused).length === 0
          ? []
          : ['', 'refused jobs (nothing ran)', ...Object.entries(refused).map(([k, n]) => `  ${k}: ${n}`)];
      process.stdout.write(
        argv.json
          ? jsonLine({ ...s, builds, nightly, refused }, 2)
          : `${renderStatus(s)}${[...buildLines, ...nightlyLines, ...refusedLines].map((l) => `${l}\n`).join('')}`,
      );
    } finally {
      await target.close();
    }
  },
});
