/**
 * `orch compare A B [C …]`: results directories (or experiment ids under --results) compared
 * unpaired, after checking they measured the same workload (orchestrator/report/compare-results.ts).
 * Two runs: B against A. More: each against the first, with the arms that changed picked by
 * Benjamini–Hochberg over every comparison (orchestrator/report/compare-runs.ts).
 * Exit 2 when they are not comparable, fewer than two are given, or one is not a results directory.
 */
import { UserInputError } from '../../jobs/errors.ts';
import { defineCommand } from '../command.ts';
import { jsonLine } from '../terminal/json-line.ts';

export const compareCommand = defineCommand({
  command: 'compare <runs..>',
  describe:
    'compare finished experiments of one workload unpaired (results dirs or ids): B against A, or each of several against the first',
  builder: (y) =>
    y
      .positional('runs', {
        type: 'string',
        array: true,
        demandOption: true,
        describe: 'results directories or experiment ids; the first is the baseline',
      })
      .option('results', { type: 'string', default: 'results', describe: 'where experiment ids are looked up' })
      .option('allow-node-change', {
        type: 'boolean',
        default: false,
        describe:
          'compare two runs whose Slurm workers ran on different nodes even where their specs do not allow it (across_runs.allow_node_change); the difference is listed',
      }),
  handler: async (argv) => {
    const runs = argv.runs;
    if (runs.length < 2)
      throw new UserInputError('CLI_USAGE', `orch compare needs at least two runs, got ${runs.length}`, {
        hint: 'orch compare A B [C …]: results directories or experiment ids, the first the baseline',
      });
    const { resolveResultsDir } = await import('../../orchestrator/report/results-dir.ts');
    const dirs = runs.map((r) => resolveResultsDir(r, argv.results));
    if (dirs.length === 2) {
      const { compareResults } = await import('../../orchestrator/report/compare-results.ts');
      const { text, ...data } = compareResults(dirs[0]!, dirs[1]!, 0.05, { allowNodeChange: argv.allowNodeChange });
      process.stdout.write(argv.json ? jsonLine(data) : text);
      return;
    }
    const { compareRuns } = await import('../../orchestrator/report/compare-runs.ts');
    const { text, ...data } = compareRuns(dirs);
    process.stdout.write(
      argv.json ? jsonLine({ ...data, comparisons: data.comparisons.map(({ text: _t, ...c }) => c) }) : text,
    );
  },
});
