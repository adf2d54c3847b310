/**
 * `orch dashboard`: the cluster and its results in a browser (orchestrator/dashboard/), /metrics
 * for Prometheus. Loopback by default; any other address needs a token (ORCH_DASHBOARD_TOKEN or
 * --token-file), and cancel needs it everywhere. Runs until SIGINT/SIGTERM.
 */
import type { Logger } from 'pino';
import type { Dashboard } from '../../orchestrator/dashboard/server.ts';
import { defineCommand } from '../command.ts';

export interface DashboardArgs {
  port: number;
  host: string;
  tokenFile?: string;
  results: string;
}

/** Starts the dashboard from REDIS_URL and the flags (also used by `orch serve --http`). */
export async function startDashboardFromArgs(args: DashboardArgs, log: Logger): Promise<Dashboard> {
  // Loaded here: fastify and bull-board are no part of every other command's start.
  const { UserInputError } = await import('../../jobs/errors.ts');
  const { readToken } = await import('../../orchestrator/dashboard/auth.ts');
  const { startDashboard } = await import('../../orchestrator/dashboard/server.ts');
  const { prefixFromEnv, redisUrlFromEnv } = await import('../embedded/redis-target.ts');
  const url = redisUrlFromEnv();
  if (!url) {
    throw new UserInputError('NO_REDIS_URL', 'orch dashboard needs REDIS_URL (the Redis that orch serve and the workers use)', {
      hint: 'export REDIS_URL=redis://:PASSWORD@host:6379, then run orch dashboard again',
    });
  }
  const token = readToken({ tokenFile: args.tokenFile });
  return startDashboard({ url, prefix: prefixFromEnv(), host: args.host, port: args.port, token, resultsRoot: args.results, log });
}

export const dashboardCommand = defineCommand<DashboardArgs>({
  command: 'dashboard',
  describe: 'serve the cluster, queue, experiments and /metrics over HTTP',
  builder: (y) =>
    y
      .option('port', { type: 'number', default: 7777, describe: 'port to listen on (0: any free one)' })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'address to bind; anything but loopback needs a token' })
      .option('token-file', { type: 'string', describe: 'file (mode 600) holding the token on its first line; default: ORCH_DASHBOARD_TOKEN' })
      .option('results', { type: 'string', default: 'results', describe: 'folder holding results/<id>/ to link and serve read-only' }) as never,
  handler: async (argv) => {
    const { orchLog } = await import('../embedded/log.ts');
    const log = orchLog('dashboard', process.env.ORCH_LOG ?? 'info');
    const d = await startDashboardFromArgs(argv, log);
    process.stdout.write(argv.json ? `${JSON.stringify({ event: 'listening', address: d.address })}\n` : `orch dashboard listening on ${d.address}\n`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
    await d.close();
  },
});
