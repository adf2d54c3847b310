/**
 * A private redis-server child process: temporary directory, a free loopback port,
 * `maxmemory-policy noeviction`, no persistence, and a random password per server
 * (`requirepass`, `protected-mode yes`, bound to 127.0.0.1): any local user can reach a loopback
 * port, and whoever can write to orch's Redis runs commands as the worker's user. The password
 * travels only in the URL this returns (in-process) and in a 0600 config file in the server's
 * 0700 directory — never in the server's argv, which every local user can read in `ps`. Used by the embedded default of `orch submit`
 * and by every test that needs control over its Redis (restarts, config).
 *
 * Ownership: the caller must `stop()` it; the child is also killed when this process exits. It
 * runs in a session and process group of its own, so a Ctrl-C at the terminal (SIGINT to the whole
 * foreground group) or a signal to the caller's group does not take Redis down under a caller
 * that is still cancelling and writing results through it; under `setpriv --pdeathsig KILL`
 * (Linux) it dies with the caller even when that is killed with -9.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UserInputError } from '../jobs/errors.ts';

export interface RedisServerProcess {
  /** `redis://:<password>@127.0.0.1:<port>` (no password part when started with password: null) */
  url: string;
  /** null: started without one (tests of the refusal of an open Redis) */
  password: string | null;
  port: number;
  dir: string;
  child: ChildProcess;
  /** Kills the server (SIGTERM, then SIGKILL after 2 s) and removes its directory. */
  stop(): Promise<void>;
}

export interface StartRedisOptions {
  /** Port to bind; default: a free one. A restart passes the old port to keep the URL. */
  port?: number;
  /** Extra `--key value` pairs, e.g. { 'maxmemory-policy': 'allkeys-lru' } for a refusal test. */
  config?: Record<string, string>;
  binary?: string;
  /** default: a fresh random one; a restart passes the old one to keep the URL; null: none */
  password?: string | null;
  /** where a free port comes from when `port` is not given (default freePort; a test plants a taken one) */
  freePort?: () => Promise<number>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export function redisServerBinary(binary = process.env.ORCH_REDIS_SERVER ?? 'redis-server'): string {
  const r = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new UserInputError(
      'REDIS_SERVER_MISSING',
      `cannot run "${binary}": the embedded default needs a redis-server binary`,
      {
        hint: 'install it (Debian/Ubuntu: `sudo apt-get install -y redis-server`; macOS: `brew install redis`), set ORCH_REDIS_SERVER to its path, or point REDIS_URL at a running Redis',
      },
    );
  }
  return binary;
}

/**
 * How many free ports a server started without one tries. freePort() closes its socket before
 * redis-server binds the port, and in between anything on the host may take it: another
 * private server, or an outgoing connection given it as its ephemeral port (the same range).
 * redis-server then exits "Address already in use", and another free port is tried.
 */
export const PORT_TRIES = 5;

/** redis-server's exit when its port was taken (redis.conf `port`; its log says so). */
class PortTakenError extends Error {}

export async function startRedisServer(opts: StartRedisOptions = {}): Promise<RedisServerProcess> {
  const binary = redisServerBinary(opts.binary);
  // hex: no character that needs escaping in a URL or in redis.conf
  const password = opts.password === undefined ? randomBytes(24).toString('hex') : opts.password;
  for (let attempt = 1; ; attempt++) {
    const port = opts.port ?? (await (opts.freePort ?? freePort)());
    try {
      return await launch(binary, port, password, opts.config ?? {});
    } catch (err) {
      // a port the caller chose (a restart keeping its URL) is not swapped for another
      if (!(err instanceof PortTakenError) || opts.port !== undefined || attempt >= PORT_TRIES) throw err;
    }
  }
}

/** One redis-server on `port`, once it accepts connections; a server that never got there is killed. */
async function launch(
  binary: string,
  port: number,
  password: string | null,
  extra: Record<string, string>,
): Promise<RedisServerProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'orch-redis-'));
  const config: Record<string, string> = {
    bind: '127.0.0.1',
    'protected-mode': 'yes',
    port: String(port),
    dir,
    save: '',
    appendonly: 'no',
    'maxmemory-policy': 'noeviction',
    ...extra,
  };
  if (password !== null) config.requirepass = password;
  // mkdtemp made dir 0700; the file is 0600 besides, as it holds the password
  const confFile = join(dir, 'redis.conf');
  writeFileSync(
    confFile,
    Object.entries(config)
      .map(([k, v]) => `${k} ${confValue(v)}\n`)
      .join(''),
    { mode: 0o600 },
  );
  const [file, argv] = hasSetpriv()
    ? ['setpriv', ['--pdeathsig', 'KILL', '--', binary, confFile]]
    : [binary, [confFile]];
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let log = '';
  child.stdout?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  child.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`redis-server on port ${port} not ready after 10 s:\n${log}`)),
      10_000,
    );
    const onData = () => {
      if (log.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    // close, not exit: the log's last lines (why it exited) have been read by then
    child.once('close', (code) => {
      clearTimeout(timer);
      const Failure = /Address already in use/i.test(log) ? PortTakenError : Error;
      reject(new Failure(`redis-server exited with ${code} before it was ready:\n${log}`));
    });
  });
  try {
    await ready;
  } catch (err) {
    // A server that never became ready is still ours: kill it rather than leave it to this process's exit.
    process.removeListener('exit', killOnExit);
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(t);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const url = password === null ? `redis://127.0.0.1:${port}` : `redis://:${password}@127.0.0.1:${port}`;
  return { url, password, port, dir, child, stop };
}

let setpriv: boolean | undefined;
/** Whether setpriv(1) can set a parent-death signal here (util-linux; asked once). */
function hasSetpriv(): boolean {
  setpriv ??= spawnSync('setpriv', ['--pdeathsig', 'KILL', '--', 'true']).status === 0;
  return setpriv;
}

/** A redis.conf value: quoted, so an empty one (`save ""`) stays a value. */
function confValue(v: string): string {
  return `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}
