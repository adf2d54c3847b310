/**
 * `orch dashboard`: the cluster and its results in a browser (orchestrator/dashboard/), /metrics
 * for Prometheus. Loopback by default, and every page needs the token there too: the one given
 * (ORCH_DASHBOARD_TOKEN or --token-file), else its own, made once in a 0600 file of the user's
 * state directory, whose path the start-up line names (the URL that signs a browser in, holding
 * the token, is printed only with --print-token: stdout goes to logs and terminals others read). --open-loopback
 * serves loopback without a token (and then takes no write action). Runs until SIGINT/SIGTERM.
 */
import type { Logger } from 'pino';
import { defineCommand } from '../command.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';
import { jsonLine } from '../terminal/json-line.ts';

export interface DashboardArgs {
  port: number;
  host: string;
  tokenFile?: string | undefined;
  openLoopback?: boolean;
  /** print the sign-in URL, token included, at start (default: only where the token file is) */
  printToken?: boolean;
  allowHost?: string[] | undefined;
  results: string;
  redisUrlFile?: string | undefined;
}

export interface StartedDashboard {
  dashboard: { address: string; close(): Promise<void> };
  /** where the token came from: a file's path, or ORCH_DASHBOARD_TOKEN; null: --open-loopback */
  tokenFrom: string | null;
  /** the address with `?token=`: printed once when the token is the dashboard's own and --print-token asked for it */
  signIn: string | null;
  /** the dashboard's own token file (mode 0600), named instead of printing the token; null: a token given, or none */
  tokenFile: string | null;
}

export interface DashboardToken {
  /** null: --open-loopback */
  token: string | null;
  /** where it came from: a file's path, or ORCH_DASHBOARD_TOKEN; null: --open-loopback */
  from: string | null;
  /** the dashboard's own (made or read from its default file): its sign-in URL is printed */
  own: boolean;
}

/** The token the flags and the environment give, else the dashboard's own; none with --open-loopback. */
export async function resolveDashboardToken(
  args: Pick<DashboardArgs, 'tokenFile' | 'openLoopback'>,
): Promise<DashboardToken> {
  const { UserInputError } = await import('../../jobs/errors.ts');
  const { readToken } = await import('../../orchestrator/dashboard/auth.ts');
  const { ensureDashboardToken } = await import('../../orchestrator/dashboard/dashboard-token-file.ts');
  const given = readToken({ tokenFile: args.tokenFile });
  if (given !== null && args.openLoopback) {
    throw new UserInputError(
      'DASHBOARD_TOKEN',
      `--open-loopback with a token (${args.tokenFile ? `--token-file ${args.tokenFile}` : 'ORCH_DASHBOARD_TOKEN'}): an open dashboard has none`,
      {
        hint: 'drop --open-loopback to use the token, or unset ORCH_DASHBOARD_TOKEN / drop --token-file to serve loopback without one',
      },
    );
  }
  if (given !== null) return { token: given, from: args.tokenFile ?? 'ORCH_DASHBOARD_TOKEN', own: false };
  if (args.openLoopback) return { token: null, from: null, own: false };
  const own = ensureDashboardToken();
  return { token: own.token, from: own.file, own: true };
}

/** Starts the dashboard from REDIS_URL and the flags. */
export async function startDashboardFromArgs(args: DashboardArgs, log: Logger): Promise<StartedDashboard> {
  // Loaded here: fastify and bull-board are no part of every other command's start.
  const { UserInputError } = await import('../../jobs/errors.ts');
  const { startDashboard } = await import('../../orchestrator/dashboard/server.ts');
  const { prefixFromEnv, redisUrlFromArgs } = await import('../embedded/redis-target.ts');
  const url = redisUrlFromArgs(args, 'dashboard');
  if (!url) {
    throw new UserInputError(
      'NO_REDIS_URL',
      'orch dashboard needs REDIS_URL or --redis-url-file (the Redis that orch serve and the workers use)',
      {
        hint: 'export REDIS_URL=redis://:PASSWORD@host:6379, or pass --redis-url-file FILE (a 0600 file holding that URL), then run orch dashboard again',
      },
    );
  }
  const t = await resolveDashboardToken(args);
  const dashboard = await startDashboard({
    url,
    prefix: prefixFromEnv(),
    host: args.host,
    port: args.port,
    token: t.token,
    openLoopback: args.openLoopback ?? false,
    allowHosts: args.allowHost ?? [],
    resultsRoot: args.results,
    log,
  });
  return { dashboard, tokenFrom: t.from, ...signInOf(dashboard.address, t, args.printToken ?? false) };
}

/**
 * How a browser signs in, as the start-up line says it: the URL holding the token only when asked
 * (--print-token), else the path of the dashboard's own 0600 token file. A token given
 * (ORCH_DASHBOARD_TOKEN, --token-file) is never printed: its owner has it.
 */
export function signInOf(
  address: string,
  t: DashboardToken,
  printToken: boolean,
): Pick<StartedDashboard, 'signIn' | 'tokenFile'> {
  if (!t.own) return { signIn: null, tokenFile: null };
  return printToken ? { signIn: `${address}/?token=${t.token}`, tokenFile: null } : { signIn: null, tokenFile: t.from };
}

/** The start-up line: the address, where the token is, and (its own token) how to sign in. */
export function describeStart(s: StartedDashboard): string {
  const token =
    s.tokenFrom === null ? 'no token (--open-loopback): read-only, loopback only' : `token from ${s.tokenFrom}`;
  const how = s.signIn
    ? `; open ${s.signIn}`
    : s.tokenFile
      ? `; sign in at ${s.dashboard.address}/login with the token in ${s.tokenFile} (mode 0600), or start with --print-token to have the sign-in URL printed`
      : '';
  return `${s.dashboard.address} (${token})${how}`;
}

export const dashboardCommand = defineCommand({
  command: 'dashboard',
  describe: 'serve the cluster, queue, experiments and /metrics over HTTP',
  builder: (y) =>
    withRedisUrlFile(y)
      .option('port', { type: 'number', default: 7777, describe: 'port to listen on (0: any free one)' })
      .option('host', {
        type: 'string',
        default: '127.0.0.1',
        describe: 'address to bind; anything but loopback needs a token given (ORCH_DASHBOARD_TOKEN or --token-file)',
      })
      .option('token-file', {
        type: 'string',
        describe:
          "file (mode 600) holding the token on its first line; default: ORCH_DASHBOARD_TOKEN, else the dashboard's own ($XDG_RUNTIME_DIR/orch/dashboard-token, else ~/.cache/orch/dashboard-token)",
      })
      .option('open-loopback', {
        type: 'boolean',
        default: false,
        describe: 'serve loopback without a token: every local user reads the cluster; no write action',
      })
      .option('print-token', {
        type: 'boolean',
        default: false,
        describe:
          "print the sign-in URL, the dashboard's own token in it, at start (default: only the path of its 0600 token file)",
      })
      .option('allow-host', {
        type: 'string',
        array: true,
        describe:
          'a host name browsers use for the dashboard besides its address (repeat); any other Host is refused (421)',
      })
      .option('results', {
        type: 'string',
        default: 'results',
        describe: 'folder holding results/<id>/ to link and serve read-only',
      }),
  handler: async (argv) => {
    const { orchLog } = await import('../embedded/log.ts');
    const log = orchLog('dashboard', process.env.ORCH_LOG ?? 'info');
    const s = await startDashboardFromArgs(argv, log);
    process.stdout.write(
      argv.json
        ? jsonLine({
            event: 'listening',
            address: s.dashboard.address,
            token_from: s.tokenFrom,
            open: s.signIn,
            token_file: s.tokenFile,
          })
        : `orch dashboard listening on ${describeStart(s)}\n`,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
      // started by orch serve --http (dashboard-process.ts): it ends with the serve that started it
      if (process.send) process.once('disconnect', () => resolve());
    });
    await s.dashboard.close();
  },
});
