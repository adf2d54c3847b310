/**
 * The dashboard of `orch serve --http`, in a process of its own (`orch dashboard`): its event loop
 * is not the scheduler's, so however many pages it serves or refuses, the leader's lease renewals
 * and grant passes wait for none of it (in one process, a flood of pages delayed the renewals
 * past the lease's TTL and the leader key lapsed). The token is resolved by the caller and handed
 * over in the environment (readable by this user alone); the child reports its address in one
 * JSON line; it ends when the serve that started it ends, even by SIGKILL (its IPC channel
 * closes). A dashboard that dies later is logged, and the scheduler goes on without it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { z } from 'zod';
import { UserInputError } from '../../jobs/errors.ts';

const ORCH_BIN = fileURLToPath(new URL('../../bin/orch.mjs', import.meta.url));
const START_TIMEOUT_MS = 60_000;
/** The dashboard's `--json` line that says where it listens. */
const ListeningSchema = z.object({ event: z.literal('listening'), address: z.string().min(1) });
const STOP_WAIT_MS = 5000;

export interface DashboardProcessOptions {
  /** the Redis URL serve uses, handed over in the environment (REDIS_URL), never in argv */
  url: string;
  port: number;
  /** null: --open-loopback */
  token: string | null;
  results: string;
  log: Logger;
}

export interface DashboardProcess {
  address: string;
  pid: number;
  close(): Promise<void>;
}

export async function startDashboardProcess(opts: DashboardProcessOptions): Promise<DashboardProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.ORCH_DASHBOARD_TOKEN;
  if (opts.token !== null) env.ORCH_DASHBOARD_TOKEN = opts.token;
  // serve may have read it from --redis-url-file: the child connects where serve does
  env.REDIS_URL = opts.url;
  const args = [
    ORCH_BIN,
    'dashboard',
    '--json',
    '--host',
    '127.0.0.1',
    '--port',
    String(opts.port),
    '--results',
    opts.results,
    ...(opts.token === null ? ['--open-loopback'] : []),
  ];
  const child: ChildProcess = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let out = '';
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new UserInputError(
            'DASHBOARD_PROCESS',
            `orch serve --http ${opts.port}: the dashboard did not listen within ${START_TIMEOUT_MS / 1000} s`,
            { hint: 'run orch dashboard --port PORT alone to see why' },
          ),
        ),
      START_TIMEOUT_MS,
    );
    const read = (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.includes('"event":"listening"'));
      if (line) {
        clearTimeout(timer);
        child.stdout!.off('data', read);
        // nothing else comes on its stdout; drained, so it never blocks on a full pipe
        child.stdout!.resume();
        const listening = ListeningSchema.safeParse(JSON.parse(line));
        if (listening.success) resolve(listening.data.address);
        else
          reject(
            new UserInputError(
              'DASHBOARD_PROCESS',
              `orch serve --http ${opts.port}: the dashboard's listening line has no address: ${line.slice(0, 300)}`,
              { hint: 'run orch dashboard --json alone to see what it prints' },
            ),
          );
      } else if (out.length > 64 * 1024) {
        clearTimeout(timer);
        reject(
          new UserInputError('DASHBOARD_PROCESS', `orch serve --http ${opts.port}: the dashboard printed no address`, {
            hint: 'run orch dashboard --json alone to see what it prints',
          }),
        );
      }
    };
    child.stdout!.on('data', read);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(
        new UserInputError(
          'DASHBOARD_PROCESS',
          `orch serve --http ${opts.port}: the dashboard exited before it listened (${signal ?? `exit code ${code}`}; its error is above)`,
          { hint: 'fix what it says (a port in use: pick another with --http PORT), or run orch serve without --http' },
        ),
      );
    });
  }).catch(async (err: unknown) => {
    child.kill('SIGKILL');
    await exited;
    throw err;
  });
  let closing = false;
  void exited.then(({ code, signal }) => {
    if (!closing)
      opts.log.error(
        { code, signal, address },
        'the dashboard process exited: orch serve goes on scheduling without it',
      );
  });
  return {
    address,
    pid: child.pid!,
    close: async () => {
      closing = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), STOP_WAIT_MS);
      await exited;
      clearTimeout(t);
    },
  };
}
