/**
 * `orch report ID`: (re)writes results/<id>/ from Redis and prints the report; `orch report
 * --from DIR`: rebuilds DIR's report files from DIR alone (orchestrator/report/rebuild-report.ts).
 * `--format junit` prints a JUnit XML file instead (orchestrator/report/render-junit.ts),
 * `--format github` GitHub workflow annotations, and appends a step summary to
 * $GITHUB_STEP_SUMMARY when that is set (orchestrator/report/render-github.ts).
 * Exit code: the outcome's under --fail-on (orchestrator/report/outcome-exit-code.ts), as
 * `orch submit` and `orch watch` give it, so CI can gate on it.
 */
import { UserInputError } from '../../jobs/errors.ts';
import type { Analysis } from '../../orchestrator/stats/types.ts';
import { defineCommand } from '../command.ts';
import type { RedisUrlArgs } from '../embedded/redis-target.ts';
import { parseFailOn, withFailOn } from '../fail-on.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';
import { jsonLine } from '../terminal/json-line.ts';

interface ReportToPrint {
  experiment: string;
  state: string;
  dir: string;
  accounting: unknown;
  analysis: Analysis;
  report: string;
}

export const reportCommand = defineCommand({
  command: 'report [id]',
  describe:
    "write results/<id>/ and print the report (or --format junit, github); exit code: the outcome's under --fail-on (orch --help)",
  builder: (y) =>
    withFailOn(
      withRedisUrlFile(y)
        .positional('id', { type: 'string', describe: 'experiment id' })
        .option('results', { type: 'string', default: 'results', describe: 'directory for results/<id>/' })
        .option('from', {
          type: 'string',
          describe: 'rebuild every report file of this results directory from the directory alone (no Redis)',
        })
        .option('format', {
          choices: ['markdown', 'junit', 'github'] as const,
          default: 'markdown' as const,
          describe:
            'markdown: the report; junit: a JUnit XML file on stdout; github: workflow annotations, and a summary appended to $GITHUB_STEP_SUMMARY',
        }),
    ),
  handler: async (argv) => {
    const failOn = parseFailOn(argv.failOn);
    if (argv.json && argv.format !== 'markdown')
      throw new UserInputError('CLI_USAGE', `--json and --format ${argv.format} both choose what is printed`, {
        hint: 'give one of them',
      });
    const w = await reportOf(argv.id, argv.from, argv.results, argv);
    const { outcomeExitCode } = await import('../../orchestrator/report/outcome-exit-code.ts');
    const out = (s: string) => process.stdout.write(s);
    if (argv.format === 'junit') {
      out((await import('../../orchestrator/report/render-junit.ts')).renderJunit([w.analysis], failOn));
    } else if (argv.format === 'github') {
      const { githubAnnotations, githubSummary } = await import('../../orchestrator/report/render-github.ts');
      out(githubAnnotations(w.analysis, failOn));
      const summary = process.env.GITHUB_STEP_SUMMARY;
      if (summary) (await import('node:fs')).appendFileSync(summary, githubSummary(w.analysis, failOn));
    } else {
      out(
        argv.json
          ? jsonLine({
              experiment: w.experiment,
              state: w.state,
              dir: w.dir,
              accounting: w.accounting,
              analysis: w.analysis,
            })
          : `${w.report}\nresults: ${w.dir}\n`,
      );
    }
    return outcomeExitCode(w.analysis, failOn);
  },
});

/** The report from Redis (written to results/<id>/ again) or rebuilt from a results directory. */
async function reportOf(
  id: string | undefined,
  from: string | undefined,
  results: string,
  redisArgs: RedisUrlArgs,
): Promise<ReportToPrint> {
  if (from !== undefined || id === undefined)
    return (await import('../../orchestrator/report/report-from-results.ts')).reportFromResults(from, id);
  // Loaded here, not at the top: every other command starts without them (cli/main.ts).
  const { orchLog } = await import('../embedded/log.ts');
  const { requireTarget } = await import('../embedded/redis-target.ts');
  const { writeResults } = await import('../../orchestrator/results/write-results.ts');
  const target = await requireTarget('report', orchLog('report'), redisArgs);
  try {
    return { experiment: id, ...(await writeResults(target.redis, target.prefix, id, results)) };
  } finally {
    await target.close();
  }
}
