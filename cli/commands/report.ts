/**
 * `orch report ID`: (re)writes results/<id>/ from Redis and prints the report. Exit code: the
 * statistics verdict (orchestrator/report/verdict-exit-code.ts: 0 faster, 3 inconclusive,
 * 4 slower, 5 invalid), so CI can gate on it.
 */
import { orchLog } from '../embedded/log.ts';
import { requireTarget } from '../embedded/redis-target.ts';
import { defineCommand } from '../command.ts';

export const reportCommand = defineCommand<{ id: string; results: string }>({
  command: 'report <id>',
  describe: 'write results/<id>/ and print the report (exit code = verdict: 0 faster, 3 inconclusive, 4 slower, 5 invalid)',
  builder: (y) =>
    y
      .positional('id', { type: 'string', demandOption: true, describe: 'experiment id' })
      .option('results', { type: 'string', default: 'results', describe: 'directory for results/<id>/' }) as never,
  handler: async (argv) => {
    // The statistics load only for the commands that report (every orch process starts faster).
    const { writeResults } = await import('../../orchestrator/results/write-results.ts');
    const { verdictExitCode } = await import('../../orchestrator/report/verdict-exit-code.ts');
    const target = await requireTarget('report', orchLog('report'));
    try {
      const w = await writeResults(target.redis, target.prefix, argv.id, argv.results);
      process.stdout.write(
        argv.json
          ? `${JSON.stringify({ experiment: argv.id, state: w.state, dir: w.dir, accounting: w.accounting, analysis: w.analysis })}\n`
          : `${w.report}\nresults: ${w.dir}\n`,
      );
      process.exitCode = verdictExitCode(w.analysis);
    } finally {
      await target.close();
    }
  },
});
