/**
 * `orch cancel ID`: tell the experiment's running blocks to stop (each aborts its rep in flight
 * and commits what it measured), end its blocks `cancelled`, and account every planned rep as
 * measured or cancelled. Waits (up to --timeout) for the scheduler to settle the experiment.
 */
import { defineCommand } from '../command.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';
import { jsonLine } from '../terminal/json-line.ts';

export const cancelCommand = defineCommand({
  command: 'cancel <id>',
  describe: 'cancel an experiment: stop its running blocks (keeping the reps measured), end its blocks cancelled',
  builder: (y) =>
    withRedisUrlFile(y)
      .positional('id', { type: 'string', demandOption: true, describe: 'experiment id' })
      .option('timeout', { type: 'number', default: 30, describe: 'seconds to wait for the scheduler to settle it' }),
  handler: async (argv) => {
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { cancelExperiment } = await import('../../orchestrator/experiment/cancel.ts');
    const { ExperimentStore } = await import('../../store/experiment-store.ts');
    const { isEnded } = await import('../../orchestrator/experiment/progress.ts');
    const { orchLog } = await import('../embedded/log.ts');
    const { requireTarget } = await import('../embedded/redis-target.ts');
    const log = orchLog('cancel');
    const target = await requireTarget('cancel', log, argv);
    try {
      const r = await cancelExperiment(target.redis, target.prefix, argv.id);
      const store = new ExperimentStore(target.redis, target.prefix);
      const deadline = Date.now() + argv.timeout * 1000;
      let state = await store.state(argv.id);
      while (r.state === 'cancelling' && !isEnded(state) && Date.now() < deadline) {
        await new Promise((res) => setTimeout(res, 200));
        state = await store.state(argv.id);
      }
      const out = { experiment: argv.id, requested: r.state, state, stopped_gangs: r.notified };
      process.stdout.write(
        argv.json
          ? jsonLine(out)
          : r.state !== 'cancelling'
            ? `${argv.id} had already ended: ${r.state}\n`
            : `${argv.id}: ${r.notified} running gang part(s) told to stop; state ${state}${isEnded(state) ? '' : ' (the scheduler has not settled it yet: is orch serve running?)'}\n`,
      );
    } finally {
      await target.close();
    }
  },
});
