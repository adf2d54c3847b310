/**
 * `orch watch ID`: a progress bar per block and the latest rep's metrics, live from the event
 * stream, until the experiment ends. `--json`: every stream event as one JSON line.
 */
import { UserInputError } from '../../jobs/errors.ts';
import { defineCommand } from '../command.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';

export const watchCommand = defineCommand({
  command: 'watch <id>',
  describe: 'follow an experiment: a progress bar per block and the latest rep metrics',
  builder: (y) => withRedisUrlFile(y).positional('id', { type: 'string', demandOption: true, describe: 'experiment id' }),
  handler: async (argv) => {
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { ExperimentStore } = await import('../../store/experiment-store.ts');
    const { progressPrinter, waitForEnd } = await import('../../orchestrator/experiment/progress.ts');
    const { orchLog } = await import('../embedded/log.ts');
    const { requireTarget } = await import('../embedded/redis-target.ts');
    const target = await requireTarget('watch', orchLog('watch'), argv);
    try {
      const exp = await new ExperimentStore(target.redis, target.prefix).get(argv.id);
      if (!exp) throw new UserInputError('NO_SUCH_EXPERIMENT', `no experiment "${argv.id}" in this Redis`, { hint: 'run orch status to list experiments' });
      const print = progressPrinter((s) => process.stdout.write(s), process.stdout.isTTY === true);
      const state = await waitForEnd(target.redis, target.prefix, exp, {
        onProgress: (p, events) => {
          if (argv.json) {
            for (const e of events) process.stdout.write(`${JSON.stringify(e)}\n`);
            return;
          }
          print(p);
        },
      });
      if (argv.json) process.stdout.write(`${JSON.stringify({ experiment: argv.id, state })}\n`);
    } finally {
      await target.close();
    }
  },
});
