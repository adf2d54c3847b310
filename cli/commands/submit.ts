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
 * Exit code when it waits: the verdict's (orchestrator/report/verdict-exit-code.ts: 0 faster,
 * 3 inconclusive, 4 slower, 5 invalid) once the experiment is done, as `orch report` gives it;
 * 2 when it failed on the user's input before any card was leased (a build that failed: the
 * error registry's kind of its code, orchestrator/experiment/failed-exit-code.ts); 1 when it
 * failed otherwise or was cancelled; 130/143 when an embedded run was interrupted.
 */
import { UserInputError } from '../../jobs/errors.ts';
import { defineCommand } from '../command.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';

export const submitCommand = defineCommand({
  command: 'submit <spec>',
  describe: 'run an experiment: validate, register, schedule, write results/<id>/ and print the report',
  builder: (y) =>
    withRedisUrlFile(y)
      .positional('spec', { type: 'string', demandOption: true, describe: 'experiment spec (YAML)' })
      .option('watch', { type: 'boolean', default: false, describe: 'show a progress bar per block while it runs' })
      .option('wait', {
        type: 'boolean',
        default: true,
        describe: 'wait for the results (--no-wait: print the id once enqueued; refuse if no registered card can run it now)',
      })
      .option('results', { type: 'string', default: 'results', describe: 'directory for results/<id>/' })
      .option('submit-token-file', { type: 'string', describe: "with REDIS_URL: file (mode 0600) holding the cluster's submit token (default: $ORCH_SUBMIT_TOKEN_FILE, else $ORCH_SUBMIT_TOKEN)" }),
  handler: async (argv) => {
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { loadSpec } = await import('../../orchestrator/spec/load-spec.ts');
    const { redisUrlFromArgs } = await import('../embedded/redis-target.ts');
    // Validation first: an invalid spec throws here, before any connection exists.
    const loaded = loadSpec(argv.spec);
    const out = (s: string) => process.stdout.write(s);
    const json = argv.json;
    const url = redisUrlFromArgs(argv, 'submit');
    if (!url) {
      if (!argv.wait) {
        throw new UserInputError(
          'NO_WAIT_EMBEDDED',
          '--no-wait needs a cluster (REDIS_URL): without REDIS_URL, submit runs the experiment on a private redis-server that dies with this command, so nothing would be left to run it',
          { hint: 'drop --no-wait to run it here and wait for the report, or export REDIS_URL=redis://HOST:PORT of a Redis that orch serve and orch worker use' },
        );
      }
      const { runEmbedded } = await import('../embedded/run-embedded.ts');
      return (await runEmbedded({ loaded, watch: argv.watch && !json, resultsRoot: argv.results, json })).exitCode;
    }
    const { orchLog } = await import('../embedded/log.ts');
    const { prefixFromEnv, connectTarget } = await import('../embedded/redis-target.ts');
    const { droppedOutputLine, progressPrinter } = await import('../../orchestrator/experiment/progress.ts');
    const { readOutputBudget } = await import('../../store/event-budget.ts');
    const { isRedisOom, redisOomError } = await import('../../store/redis-oom.ts');
    const { submitExperiment } = await import('../../orchestrator/experiment/submit.ts');
    const { runExperiment } = await import('../../orchestrator/experiment/run-experiment.ts');
    const log = orchLog('submit');
    // before connecting: without the token the scheduler would refuse whatever this registered
    const { requireSubmitToken } = await import('../../store/submit-token.ts');
    const submitToken = requireSubmitToken('orch submit', argv.submitTokenFile);
    const target = await connectTarget(url, prefixFromEnv(), log);
    try {
      const input = { redis: target.redis, prefix: target.prefix, loaded, submitToken };
      if (!argv.wait) {
        const sub = await submitExperiment({ ...input, noWait: true });
        out(json ? `${JSON.stringify({ experiment: sub.id, hash: loaded.hash, waiting_for: sub.waitingFor })}\n` : `${sub.id}\n`);
        return;
      }
      const { id, state, written, exitCode } = await runExperiment({
        ...input,
        resultsRoot: argv.results,
        wait: argv.watch && !json ? { onProgress: progressPrinter(out, process.stdout.isTTY === true) } : { onWaiting: (why) => process.stderr.write(`${why}\n`) },
        onSubmitted: (sub) => json || out(`experiment ${sub.id} (spec ${loaded.hash.slice(0, 12)})${sub.waitingFor ? ` waiting: ${sub.waitingFor}` : ''}\n`),
      });
      out(json ? `${JSON.stringify({ experiment: id, state, dir: written.dir, accounting: written.accounting, verdict: written.analysis.verdict })}\n` : `${written.report}\nresults: ${written.dir}\n`);
      if (!json) out(droppedOutputLine(await readOutputBudget(target.redis, target.prefix, id)) ?? '');
      return exitCode;
    } catch (err) {
      // a full Redis is the cluster's condition, not a bug: REDIS_OOM, with what filled it
      throw isRedisOom(err) ? await redisOomError(target.redis, target.prefix, err, `submitting ${argv.spec}`) : err;
    } finally {
      await target.close();
    }
  },
});
