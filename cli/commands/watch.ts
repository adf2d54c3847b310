/**
 * `orch watch ID`: a progress bar per block, the latest rep's metrics, the time since submit and
 * the ETA, live from the event stream, until the experiment ends (cli/terminal/: redrawn in place
 * on a terminal, append-only lines in a pipe or under TERM=dumb). `--json`: every stream event as
 * one JSON line. Ctrl-C stops watching, not the experiment (`--cancel-on-interrupt`: cancels it).
 * Exit code: the outcome's under --fail-on (orchestrator/report/outcome-exit-code.ts), the same
 * `orch submit` and `orch report` give: a cancelled run exits 9, never 0.
 */
import { UserInputError } from '../../jobs/errors.ts';
import { defineCommand } from '../command.ts';
import { parseFailOn, withFailOn } from '../fail-on.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';
import { jsonLine } from '../terminal/json-line.ts';

export const watchCommand = defineCommand({
  command: 'watch <id>',
  describe: 'follow an experiment: a progress bar per block, the latest rep metrics, elapsed time and ETA',
  builder: (y) =>
    withFailOn(
      withRedisUrlFile(y).positional('id', { type: 'string', demandOption: true, describe: 'experiment id' }),
    ).option('cancel-on-interrupt', {
      type: 'boolean',
      default: false,
      describe: 'Ctrl-C cancels the experiment (default: it keeps running, and watch says how to cancel it)',
    }),
  handler: async (argv) => {
    const failOn = parseFailOn(argv.failOn);
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { ExperimentStore } = await import('../../store/experiment-store.ts');
    const { waitForEnd } = await import('../../orchestrator/experiment/progress.ts');
    const { progressPrinter } = await import('../terminal/progress-printer.ts');
    const { liveColumns, terminalMode } = await import('../terminal/terminal-mode.ts');
    const { WatchInterrupt } = await import('../terminal/watch-interrupt.ts');
    const { orchLog } = await import('../embedded/log.ts');
    const { requireTarget } = await import('../embedded/redis-target.ts');
    const { collectRecords } = await import('../../orchestrator/results/collect-results.ts');
    const { analyzeRecords } = await import('../../orchestrator/results/write-results.ts');
    const { outcomeExitCode } = await import('../../orchestrator/report/outcome-exit-code.ts');
    const { failedOutputLines } = await import('../../orchestrator/report/failed-output-section.ts');
    const target = await requireTarget('watch', orchLog('watch'), argv);
    const interrupt = new WatchInterrupt(argv.cancelOnInterrupt);
    try {
      const exp = await new ExperimentStore(target.redis, target.prefix).get(argv.id);
      if (!exp)
        throw new UserInputError('NO_SUCH_EXPERIMENT', `no experiment "${argv.id}" in this Redis`, {
          hint: 'run orch status to list experiments',
        });
      interrupt.following(exp.id);
      const print = progressPrinter((s) => process.stdout.write(s), terminalMode(process.stdout), {
        columns: liveColumns(process.stdout),
      });
      const state = await waitForEnd(target.redis, target.prefix, exp, {
        signal: interrupt.abort.signal,
        onProgress: (p, events) => {
          if (argv.json) {
            for (const e of events) process.stdout.write(jsonLine(e));
            return;
          }
          print(p);
        },
      });
      interrupt.dispose();
      if (interrupt.interrupted)
        return await interrupt.finish(target.redis, target.prefix, (l) => process.stderr.write(`${l}\n`));
      // the outcome as `orch report` would judge it, without writing results/<id>/
      const analysis = analyzeRecords(await collectRecords(target.redis, target.prefix, argv.id));
      const exitCode = outcomeExitCode(analysis, failOn);
      process.stdout.write(
        argv.json
          ? jsonLine({ experiment: argv.id, state, verdict: analysis.verdict, exit_code: exitCode })
          : `experiment ${argv.id} ended ${state}: ${analysis.verdict} (exit ${exitCode})\n`,
      );
      // why a block failed, in the program's own words, as submit prints it at its end
      for (const l of failedOutputLines(analysis)) process.stderr.write(`${l}\n`);
      return exitCode;
    } finally {
      interrupt.dispose();
      await target.close();
    }
  },
});
