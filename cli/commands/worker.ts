/**
 * `orch worker --host NAME [--cards auto|LIST] [--graphrt PATH] [--cpu-cards N]`: the per-host
 * daemon (worker/worker.ts). Runs until SIGTERM or SIGINT, then stops gracefully: the rep in
 * flight finishes, the leases are released, the rest of the block is reported not run.
 */
import { fileURLToPath } from 'node:url';
import { UserInputError } from '../../jobs/errors.ts';
import { orchLog } from '../embedded/log.ts';
import { defineCommand } from '../command.ts';
import { defaultHost, Worker } from '../../worker/worker.ts';

const DEFAULT_GRAPHRT = fileURLToPath(new URL('../../native/build/graphrt', import.meta.url));

interface WorkerArgs {
  host: string;
  cards: string;
  graphrt: string;
  cpuCards: number;
  redis: string | undefined;
  lockDir: string | undefined;
  buildDir: string | undefined;
  prefix: string;
  heartbeatMs: number;
}

export const workerCommand = defineCommand<WorkerArgs>({
  command: 'worker',
  describe: "run this host's worker: register its cards and run the blocks dispatched to it",
  builder: (y) =>
    y
      .option('host', { type: 'string', default: defaultHost(), describe: 'host name (the queue is host-<name>)' })
      .option('cards', { type: 'string', default: 'auto', describe: 'auto, or a comma list of GPU indexes/UUIDs or cpu:N' })
      .option('graphrt', { type: 'string', default: DEFAULT_GRAPHRT, describe: 'the graphrt binary run once per rank' })
      .option('cpu-cards', { type: 'number', default: 1, describe: 'with no GPU: how many cpu:N cards to offer' })
      .option('redis', { type: 'string', describe: 'Redis URL (default: $REDIS_URL)' })
      .option('lock-dir', { type: 'string', describe: 'directory of the per-card flock files (default: $TMPDIR/orch-cards)' })
      .option('build-dir', { type: 'string', describe: 'build cache of command workloads, on a big disk (default: $ORCH_BUILD_DIR, else ~/.cache/orch/builds)' })
      .option('prefix', { type: 'string', default: 'orch', hidden: true })
      .option('heartbeat-ms', { type: 'number', default: 2000, describe: 'heartbeat and lease renew period; leases live twice this' }) as never,
  handler: async (argv) => {
    const redisUrl = argv.redis ?? process.env.REDIS_URL;
    if (!redisUrl) {
      throw new UserInputError('REDIS_URL_MISSING', 'orch worker needs a Redis to take its work from', {
        hint: 'pass --redis redis://HOST:PORT or set REDIS_URL (the URL `orch serve` uses)',
      });
    }
    if (!Number.isInteger(argv.cpuCards) || argv.cpuCards < 1) throw new UserInputError('CLI_USAGE', `--cpu-cards ${argv.cpuCards}: expected a positive integer`);
    if (!(argv.heartbeatMs >= 50)) throw new UserInputError('CLI_USAGE', `--heartbeat-ms ${argv.heartbeatMs}: expected at least 50`);
    const worker = new Worker({
      redisUrl,
      host: argv.host,
      cards: argv.cards === 'auto' ? 'auto' : argv.cards.split(',').map((s) => s.trim()).filter(Boolean),
      cpuCards: argv.cpuCards,
      graphrt: argv.graphrt,
      lockDir: argv.lockDir,
      buildDir: argv.buildDir,
      prefix: argv.prefix,
      heartbeatMs: argv.heartbeatMs,
      log: orchLog('worker', process.env.ORCH_LOG ?? 'info'),
    });
    const stopped = new Promise<void>((resolve) => {
      const onSignal = (sig: string) => {
        process.stderr.write(`orch worker: ${sig}, stopping after the reps in flight\n`);
        worker.stop().then(resolve, resolve);
      };
      process.once('SIGTERM', () => onSignal('SIGTERM'));
      process.once('SIGINT', () => onSignal('SIGINT'));
    });
    // SIGTERM while still waiting for Redis ends the wait too
    await Promise.race([worker.start(), stopped]);
    await stopped;
  },
});
