/**
 * `orch submit SPEC [--watch] [--no-wait]`: validate, register the spec and its hash, enqueue,
 * print the experiment id. With REDIS_URL: the cluster's scheduler runs it; submit waits for
 * the end, writes results/<id>/ and prints the report (`--no-wait`: return once enqueued, and
 * refuse a spec no registered card can run now). Without REDIS_URL: the embedded default —
 * a private redis-server, a scheduler and a local worker for this one experiment.
 *
 * With REDIS_URL it signs the experiment with the cluster's submit token (--submit-token-file,
 * ORCH_SUBMIT_TOKEN_FILE or ORCH_SUBMIT_TOKEN; the scheduler acts on nothing unsigned) and is
 * refused, exit 2, without one, as is a spec whose work no registered worker allows.
 *
 * Exit code when it waits: the outcome's under --fail-on (orchestrator/report/outcome-exit-code.ts:
 * 0 faster or pass; inconclusive 3, slower 4, invalid 5, equivalent 6, a probe's fail 7 when
 * --fail-on has them, else 0; failed 8, cancelled 9), as `orch report` and `orch watch` give it;
 * 2 when it failed on the user's input before any card was leased (a build that failed,
 * orchestrator/results/stopped-experiment.ts); 130/143 when an embedded run was interrupted.
 * On a cluster, Ctrl-C while it waits stops the waiting, not the experiment: submit says so and how
 * to follow, report or cancel it, and exits 130 (`--cancel-on-interrupt`: cancels it; cli/terminal/watch-interrupt.ts).
 */
import { UserInputError } from '../../jobs/errors.ts';
import { defineCommand } from '../command.ts';
import { parseFailOn, withFailOn } from '../fail-on.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';
import { jsonLine } from '../terminal/json-line.ts';

export const submitCommand = defineCommand({
  command: 'submit <spec>',
  describe: 'run an experiment: validate, register, schedule, write results/<id>/ and print the report',
  builder: (y) =>
    withFailOn(withRedisUrlFile(y))
      .positional('spec', { type: 'string', demandOption: true, describe: 'experiment spec (YAML)' })
      .option('watch', {
        type: 'boolean',
        describe:
          'show a progress bar per block while it runs (default: on when stdout is a terminal; --no-watch turns it off)',
      })
      .option('wait', {
        type: 'boolean',
        default: true,
        describe:
          'wait for the results (--no-wait: print the id once enqueued; refuse if no registered card can run it now)',
      })
      .option('cancel-on-interrupt', {
        type: 'boolean',
        default: false,
        describe:
          'with REDIS_URL: Ctrl-C cancels the experiment (default: it keeps running on the cluster, and submit says how to follow or cancel it)',
      })
      .option('results', { type: 'string', default: 'results', describe: 'directory for results/<id>/' })
      .option('submit-token-file', {
        type: 'string',
        describe:
          "with REDIS_URL: file (mode 0600) holding the cluster's submit token (default: $ORCH_SUBMIT_TOKEN_FILE, else $ORCH_SUBMIT_TOKEN)",
      }),
  handler: async (argv) => {
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { loadSpec } = await import('../../orchestrator/spec/load-spec.ts');
    const { redisUrlFromArgs } = await import('../embedded/redis-target.ts');
    // Validation first: an invalid spec throws here, before any connection exists.
    const loaded = loadSpec(argv.spec);
    const failOn = parseFailOn(argv.failOn);
    const out = (s: string) => process.stdout.write(s);
    const json = argv.json;
    const url = redisUrlFromArgs(argv, 'submit');
    if (!url) {
      if (!argv.wait) {
        throw new UserInputError(
          'NO_WAIT_EMBEDDED',
          '--no-wait needs a cluster (REDIS_URL): without REDIS_URL, submit runs the experiment on a private redis-server that dies with this command, so nothing would be left to run it',
          {
            hint: 'drop --no-wait to run it here and wait for the report, or export REDIS_URL=redis://HOST:PORT of a Redis that orch serve and orch worker use',
          },
        );
      }
      const { runEmbedded } = await import('../embedded/run-embedded.ts');
      return (
        await runEmbedded({ loaded, watch: watchByDefault(argv.watch, json), resultsRoot: argv.results, json, failOn })
      ).exitCode;
    }
    const { orchLog } = await import('../embedded/log.ts');
    const { prefixFromEnv, connectTarget } = await import('../embedded/redis-target.ts');
    const { droppedOutputLine, waitForEnd } = await import('../../orchestrator/experiment/progress.ts');
    const { progressPrinter } = await import('../terminal/progress-printer.ts');
    const { liveColumns, terminalMode } = await import('../terminal/terminal-mode.ts');
    const { WatchInterrupt } = await import('../terminal/watch-interrupt.ts');
    const { readOutputBudget } = await import('../../store/event-budget.ts');
    const { isRedisOom, redisOomError } = await import('../../store/redis-oom.ts');
    const { submitExperiment } = await import('../../orchestrator/experiment/submit.ts');
    const { awaitResults } = await import('../../orchestrator/experiment/run-experiment.ts');
    const { failedOutputLines } = await import('../../orchestrator/report/failed-output-section.ts');
    const { ExperimentStore } = await import('../../store/experiment-store.ts');
    const log = orchLog('submit');
    // before connecting: without the token the scheduler would refuse whatever this registered
    const { requireSubmitToken } = await import('../../store/submit-token.ts');
    const submitToken = requireSubmitToken('orch submit', argv.submitTokenFile);
    const target = await connectTarget(url, prefixFromEnv(), log);
    try {
      const input = { redis: target.redis, prefix: target.prefix, loaded, submitToken };
      if (!argv.wait) {
        const sub = await submitExperiment({ ...input, noWait: true });
        out(json ? jsonLine({ experiment: sub.id, hash: loaded.hash, waiting_for: sub.waitingFor }) : `${sub.id}\n`);
        return;
      }
      const interrupt = new WatchInterrupt(argv.cancelOnInterrupt);
      try {
        const sub = await submitExperiment(input);
        interrupt.following(sub.id);
        if (!json)
          out(
            `experiment ${sub.id} (spec ${loaded.hash.slice(0, 12)})${sub.waitingFor ? ` waiting: ${sub.waitingFor}` : ''}\n`,
          );
        const exp = (await new ExperimentStore(target.redis, target.prefix).get(sub.id))!;
        const watching = watchByDefault(argv.watch, json);
        await waitForEnd(target.redis, target.prefix, exp, {
          signal: interrupt.abort.signal,
          ...(watching
            ? {
                onProgress: progressPrinter(out, terminalMode(process.stdout), {
                  columns: liveColumns(process.stdout),
                }),
              }
            : { onWaiting: (why: string) => process.stderr.write(`${why}\n`) }),
        });
      } finally {
        interrupt.dispose();
      }
      if (interrupt.interrupted)
        return interrupt.finish(target.redis, target.prefix, (l) => process.stderr.write(`${l}\n`));
      // ended: the wait inside returns at once
      const { id, state, written, exitCode } = await awaitResults(target.redis, target.prefix, interrupt.experiment!, {
        resultsRoot: argv.results,
        failOn,
      });
      out(
        json
          ? jsonLine({
              experiment: id,
              state,
              dir: written.dir,
              accounting: written.accounting,
              verdict: written.analysis.verdict,
            })
          : `${written.report}\nresults: ${written.dir}\n`,
      );
      if (!json) out(droppedOutputLine(await readOutputBudget(target.redis, target.prefix, id)) ?? '');
      // why a block failed, in the program's own words, where a user looks last
      for (const l of failedOutputLines(written.analysis)) process.stderr.write(`${l}\n`);
      return exitCode;
    } catch (err) {
      // a full Redis is the cluster's condition, not a bug: REDIS_OOM, with what filled it
      throw isRedisOom(err) ? await redisOomError(target.redis, target.prefix, err, `submitting ${argv.spec}`) : err;
    } finally {
      await target.close();
    }
  },
});

/**
 * Progress is drawn unless asked not to (--no-watch) or --json: by default on a terminal, where
 * it is redrawn in place with its ETA (cli/terminal/progress-printer.ts); a pipe or a file gets
 * it only with --watch, as plain lines.
 */
export function watchByDefault(
  watch: boolean | undefined,
  json: boolean,
  stdout: { isTTY?: boolean } = process.stdout,
): boolean {
  return !json && (watch ?? stdout.isTTY === true);
}
