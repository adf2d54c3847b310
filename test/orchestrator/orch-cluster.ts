/**
 * Real processes for the orchestrator tests: `orch` commands, `orch serve` schedulers and an
 * `orch worker` whose ranks are the protocol fixture (test/fixtures/ranks/rank.sh), against a
 * real redis-server. Every child is killed by its pid in stop(); nothing is left running.
 */
import '../utils/cluster-secret.ts';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { RUN_AS_SELF } from '../utils/worker-process.ts';

export const ORCH = join(process.cwd(), 'bin/orch.mjs');
export const FIXTURE_RANK = join(process.cwd(), 'test/fixtures/ranks/rank.sh');

export interface OrchChild {
  child: ChildProcess;
  out(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnOrch(args: string[], env: Record<string, string>): OrchChild {
  const child = spawn(process.execPath, [ORCH, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );
  return { child, out: () => out, exited };
}

export async function runOrch(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [ORCH, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

export interface Cluster {
  url: string;
  prefix: string;
  redis: Redis;
  env: Record<string, string>;
  /** one line per rank process start/end: {ev, card, rank, pid, t} */
  fixtureLog: string;
  serves: OrchChild[];
  worker: OrchChild | null;
  startServe(): OrchChild;
  startWorker(opts: { host?: string; cpuCards: number; repMs: number }): Promise<OrchChild>;
  rankLog(): { ev: 'start' | 'end'; card: string; rank: number; pid: number; t: number }[];
  stop(): Promise<void>;
}

export async function startCluster(server?: RedisServerProcess): Promise<Cluster> {
  const own = server === undefined;
  const srv = server ?? (await startRedisServer());
  const prefix = freshPrefix('o');
  const dir = mkdtempSync(join(tmpdir(), 'orch-cluster-'));
  const fixtureLog = join(dir, 'ranks.jsonl');
  const redis = new Redis(srv.url, { maxRetriesPerRequest: null });
  const env = { REDIS_URL: srv.url, ORCH_PREFIX: prefix, ORCH_LOG: process.env.ORCH_TEST_LOG ?? 'warn' };
  const children: OrchChild[] = [];
  const c: Cluster = {
    url: srv.url,
    prefix,
    redis,
    env,
    fixtureLog,
    serves: [],
    worker: null,
    startServe() {
      const s = spawnOrch(['serve', '--leader-ttl', '1500', '--json'], env);
      children.push(s);
      c.serves.push(s);
      return s;
    },
    async startWorker({ host = 'h1', cpuCards, repMs }) {
      const w = spawnOrch(
        [
          'worker',
          '--host',
          host,
          '--cpu-cards',
          String(cpuCards),
          '--graphrt',
          FIXTURE_RANK,
          '--heartbeat-ms',
          '1000',
          '--lock-dir',
          join(dir, `locks-${host}`),
          '--prefix',
          prefix,
          '--allow-command',
          ...RUN_AS_SELF,
        ],
        { ...env, FIXTURE_LOG: fixtureLog, FIXTURE_REP_MS: String(repMs) },
      );
      children.push(w);
      c.worker = w;
      await waitFor(
        `worker ${host} registered`,
        async () => (await redis.exists(`${prefix}:host:${host}:alive`)) === 1,
        { timeoutMs: 20_000 },
      );
      return w;
    },
    rankLog() {
      if (!existsSync(fixtureLog)) return [];
      return readFileSync(fixtureLog, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    },
    async stop() {
      for (const ch of children) {
        if (ch.child.exitCode === null && ch.child.signalCode === null) ch.child.kill('SIGTERM');
      }
      for (const ch of children) {
        const t = setTimeout(() => ch.child.kill('SIGKILL'), 5000);
        await ch.exited;
        clearTimeout(t);
      }
      redis.disconnect();
      if (own) await srv.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return c;
}

/** A cluster with its `orch serve` and one worker of `cpuCards` cpu cards (fixture ranks taking `repMs` a rep), ready. */
export async function startServeAndWorker(opts: { cpuCards: number; repMs: number }): Promise<Cluster> {
  const c = await startCluster();
  c.startServe();
  await c.startWorker(opts);
  return c;
}

/** Per card, the [start, end] of each rank process, from the fixture log. */
export function rankIntervals(
  log: ReturnType<Cluster['rankLog']>,
): Map<string, { pid: number; start: number; end: number }[]> {
  const byPid = new Map<number, { card: string; start: number; end: number }>();
  for (const e of log) {
    const cur = byPid.get(e.pid) ?? { card: e.card, start: Number.NaN, end: Number.POSITIVE_INFINITY };
    if (e.ev === 'start') cur.start = e.t;
    else cur.end = e.t;
    byPid.set(e.pid, cur);
  }
  const out = new Map<string, { pid: number; start: number; end: number }[]>();
  for (const [pid, iv] of byPid) out.set(iv.card, [...(out.get(iv.card) ?? []), { pid, start: iv.start, end: iv.end }]);
  return out;
}

export { isAlive } from '../build/build-helpers.ts';
