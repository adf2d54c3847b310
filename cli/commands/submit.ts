/**
 * `orch submit SPEC [--watch] [--no-wait]`: validate, register the spec and its hash, enqueue,
 * print the experiment id. With REDIS_URL: the cluster's scheduler runs it; submit waits for
 * the end, writes results/<id>/ and prints the report (`--no-wait`: return once enqueued, and
 * refuse a spec no registered card can run now). Without REDIS_URL: the embedded default —
 * a private redis-server, a scheduler and a local worker for this one experiment.
 */
import { readFileSync } from 'node:fs';
import { loadSpec } from '../../jobs/load-spec.ts';
import { UserInputError } from '../../jobs/errors.ts';
import { orchLog } from '../embedded/log.ts';
import { prefixFromEnv, redisUrlFromEnv, connectTarget } from '../embedded/redis-target.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { progressPrinter, waitForEnd } from '../../orchestrator/experiment/progress.ts';
import { submitExperiment } from '../../orchestrator/experiment/submit.ts';
import { defineCommand } from '../command.ts';

interface SubmitArgs {
  spec: string;
  watch: boolean;
  wait: boolean;
  results: string;
}

export const submitCommand = defineCommand<SubmitArgs>({
  command: 'submit <spec>',
  describe: 'run an experiment: validate, register, schedule, write results/<id>/ and print the report',
  builder: (y) =>
    y
      .positional('spec', { type: 'string', demandOption: true, describe: 'experiment spec (YAML)' })
      .option('watch', { type: 'boolean', default: false, describe: 'show a progress bar per block while it runs' })
      .option('wait', {
        type: 'boolean',
        default: true,
        describe: 'wait for the results (--no-wait: print the id once enqueued; refuse if no registered card can run it now)',
      })
      .option('results', { type: 'string', default: 'results', describe: 'directory for results/<id>/' }) as never,
  handler: async (argv) => {
    // The statistics load only for the commands that report (every orch process starts faster).
    const { writeResults } = await import('../../orchestrator/results/write-results.ts');
    // Validation first: an invalid spec throws here, before any connection exists.
    const loaded = loadSpec(argv.spec);
    const specText = readFileSync(argv.spec, 'utf8');
    const out = (s: string) => process.stdout.write(s);
    const json = argv.json;
    const url = redisUrlFromEnv();
    if (!url) {
      if (!argv.wait) {
        throw new UserInputError(
          'NO_WAIT_EMBEDDED',
          '--no-wait needs a cluster (REDIS_URL): without REDIS_URL, submit runs the experiment on a private redis-server that dies with this command, so nothing would be left to run it',
          { hint: 'drop --no-wait to run it here and wait for the report, or export REDIS_URL=redis://HOST:PORT of a Redis that orch serve and orch worker use' },
        );
      }
      const { runEmbedded } = await import('../embedded/run-embedded.ts');
      const r = await runEmbedded({ loaded, specText, watch: argv.watch && !json, resultsRoot: argv.results, json });
      process.exitCode = r.exitCode;
      return;
    }
    const log = orchLog('submit');
    const target = await connectTarget(url, prefixFromEnv(), log);
    try {
      const sub = await submitExperiment({ redis: target.redis, prefix: target.prefix, loaded, specText, noWait: !argv.wait });
      if (!argv.wait) {
        out(json ? `${JSON.stringify({ experiment: sub.id, hash: loaded.hash, waiting_for: sub.waitingFor })}\n` : `${sub.id}\n`);
        return;
      }
      if (!json) out(`experiment ${sub.id} (spec ${loaded.hash.slice(0, 12)})${sub.waitingFor ? ` waiting: ${sub.waitingFor}` : ''}\n`);
      const exp = (await new ExperimentStore(target.redis, target.prefix).get(sub.id))!;
      const state = await waitForEnd(target.redis, target.prefix, exp, argv.watch && !json ? { onProgress: progressPrinter(out, process.stdout.isTTY === true) } : {});
      const written = await writeResults(target.redis, target.prefix, sub.id, argv.results);
      out(json ? `${JSON.stringify({ experiment: sub.id, state, dir: written.dir, accounting: written.accounting, verdict: written.analysis.verdict })}\n` : `${written.report}\nresults: ${written.dir}\n`);
      process.exitCode = state === 'done' ? 0 : 1;
    } finally {
      await target.close();
    }
  },
});
