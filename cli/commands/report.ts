/**
 * `orch report ID`: (re)writes results/<id>/ from Redis and prints the report; `orch report
 * --from DIR`: rebuilds DIR's report files from DIR alone (orchestrator/report/rebuild-report.ts).
 * Exit code: the statistics verdict (orchestrator/report/verdict-exit-code.ts: 0 faster, 3 inconclusive,
 * 4 slower, 5 invalid), so CI can gate on it.
 */
import { defineCommand } from '../command.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';

export const reportCommand = defineCommand({
  command: 'report [id]',
  describe: 'write results/<id>/ and print the report (exit code = verdict: 0 faster, 3 inconclusive, 4 slower, 5 invalid)',
  builder: (y) =>
    withRedisUrlFile(y)
      .positional('id', { type: 'string', describe: 'experiment id' })
      .option('results', { type: 'string', default: 'results', describe: 'directory for results/<id>/' })
      .option('from', { type: 'string', describe: 'rebuild every report file of this results directory from the directory alone (no Redis)' }),
  handler: async (argv) => {
    if (argv.from !== undefined || argv.id === undefined) {
      const { reportFromResults } = await import('../../orchestrator/report/report-from-results.ts');
      return await reportFromResults(argv.from, argv.id, (s) => process.stdout.write(s), argv.json === true);
    }
    const id = argv.id;
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { orchLog } = await import('../embedded/log.ts');
    const { requireTarget } = await import('../embedded/redis-target.ts');
    const { writeResults } = await import('../../orchestrator/results/write-results.ts');
    const { verdictExitCode } = await import('../../orchestrator/report/verdict-exit-code.ts');
    const target = await requireTarget('report', orchLog('report'), argv);
    try {
      const w = await writeResults(target.redis, target.prefix, id, argv.results);
      process.stdout.write(
        argv.json
          ? `${JSON.stringify({ experiment: id, state: w.state, dir: w.dir, accounting: w.accounting, analysis: w.analysis })}\n`
          : `${w.report}\nresults: ${w.dir}\n`,
      );
      return verdictExitCode(w.analysis);
    } finally {
      await target.close();
    }
  },
});
