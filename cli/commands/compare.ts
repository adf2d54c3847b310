/**
 * `orch compare A B`: two results directories (or experiment ids under --results) compared
 * unpaired, after checking they measured the same workload (orchestrator/report/compare-results.ts).
 * Exit 2 when they are not comparable or one is not a results directory.
 */
import { defineCommand } from '../command.ts';

export const compareCommand = defineCommand({
  command: 'compare <a> <b>',
  describe: 'compare two finished experiments unpaired (results dirs or ids), after checking they measured the same workload',
  builder: (y) =>
    y
      .positional('a', { type: 'string', demandOption: true, describe: 'results directory or experiment id (A)' })
      .positional('b', { type: 'string', demandOption: true, describe: 'results directory or experiment id (B)' })
      .option('results', { type: 'string', default: 'results', describe: 'where experiment ids are looked up' })
      .option('allow-node-change', { type: 'boolean', default: false, describe: 'compare runs whose Slurm workers ran on different nodes (refused by default; the difference is listed)' }),
  handler: async (argv) => {
    const { compareResults } = await import('../../orchestrator/report/compare-results.ts');
    const { resolveResultsDir } = await import('../../orchestrator/report/results-dir.ts');
    const r = compareResults(resolveResultsDir(argv.a, argv.results), resolveResultsDir(argv.b, argv.results), 0.05, { allowNodeChange: argv.allowNodeChange });
    const { text, ...data } = r;
    process.stdout.write(argv.json ? `${JSON.stringify(data)}\n` : text);
  },
});
