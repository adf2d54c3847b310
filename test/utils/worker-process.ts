/**
 * A real `orch worker` process (bin/orch.mjs) for tests: fixture ranks by default, short
 * heartbeats, its own lock dir, a given key prefix, the Redis URL in its environment (never in
 * argv: it holds the password). Resolves once the worker logs "worker ready".
 */
import './cluster-secret.ts';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait-for.ts';

export const ORCH_BIN = fileURLToPath(new URL('../../bin/orch.mjs', import.meta.url));
const HAS_SETPRIV = spawnSync('setpriv', ['--pdeathsig', 'KILL', '--', 'true']).status === 0;
export const FIXTURE_RANK = fileURLToPath(new URL('../fixtures/ranks/rank.sh', import.meta.url));
/**
 * A test worker's programs run as its own user: a root worker's default, orch-run (worker/run-as.ts),
 * could not enter the tests' private temporary directories. The run-as tests leave it out.
 */
export const RUN_AS_SELF = ['--run-as', 'none'];

export interface WorkerProcess {
  child: ChildProcess;
  /** stderr so far (pino JSON lines and messages) */
  log(): string;
  /** resolves with the exit code/signal */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL if still running */
  kill(): void;
}

export interface WorkerSpawnOptions {
  redisUrl: string;
  host: string;
  prefix: string;
  /** '': none given, the worker's default */
  lockDir: string;
  cards?: string;
  graphrt?: string;
  heartbeatMs?: number;
  env?: Record<string, string>;
  /** extra arguments of `orch worker` */
  args?: string[];
  /** pass --allow-command (default true: the tests of command workloads need it) */
  allowCommand?: boolean;
  /** leave --run-as to the worker's default (orch-run for a root worker) instead of RUN_AS_SELF */
  defaultRunAs?: boolean;
  /** do not wait for "worker ready" (a worker expected to refuse or to retry) */
  noWait?: boolean;
  readyTimeoutMs?: number;
}

export async function spawnWorker(o: WorkerSpawnOptions): Promise<WorkerProcess> {
  const args = [
    ORCH_BIN,
    'worker',
    '--host',
    o.host,
    '--cards',
    o.cards ?? 'cpu:0',
    '--graphrt',
    o.graphrt ?? FIXTURE_RANK,
    ...(o.lockDir === '' ? [] : ['--lock-dir', o.lockDir]),
    '--prefix',
    o.prefix,
    '--heartbeat-ms',
    String(o.heartbeatMs ?? 600),
    ...(o.allowCommand === false ? [] : ['--allow-command']),
    ...(o.defaultRunAs || o.args?.includes('--run-as') ? [] : RUN_AS_SELF),
    ...(o.args ?? []),
  ];
  // PR_SET_PDEATHSIG where setpriv exists: a test process killed on timeout leaves no worker behind
  const [file, argv] = HAS_SETPRIV
    ? ['setpriv', ['--pdeathsig', 'KILL', '--', process.execPath, ...args]]
    : [process.execPath, args];
  const child = spawn(file, argv, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ORCH_LOG: 'debug', REDIS_URL: o.redisUrl, ...o.env },
  });
  let text = '';
  child.stdout?.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (text += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  void exited.then(() => process.removeListener('exit', killOnExit));
  const w: WorkerProcess = {
    child,
    log: () => text,
    exited,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
  if (!o.noWait) {
    let done = false;
    void exited.then(() => (done = true));
    try {
      await waitFor(
        `worker ${o.host} ready`,
        () => {
          if (done) throw new Error(`worker ${o.host} exited before it was ready`);
          return text.includes('"worker ready"');
        },
        { timeoutMs: o.readyTimeoutMs ?? 30_000 },
      );
    } catch (err) {
      w.kill();
      throw new Error(`${(err as Error).message}; its output:\n${text.slice(-3000)}`);
    }
  }
  return w;
}
