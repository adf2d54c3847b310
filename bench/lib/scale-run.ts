/**
 * One run of the scheduler at scale: a private redis-server, the stand-in hosts in a child
 * process (stand-in-fleet.ts), the real Scheduler in this process, and a seeded stream of
 * experiments of 1/2/4/8-rank blocks submitted through the real submitExperiment. Waits until
 * every experiment ended, then reads what the scheduler wrote (block states) and what the hosts
 * saw (host-job records) into scale-metrics.ts.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { type Level, pino } from 'pino';
import { newClusterSecret } from '../../jobs/grant.ts';
import { mulberry32 } from '../../jobs/seeded-random.ts';
import { submitExperiment } from '../../orchestrator/experiment/submit.ts';
import { Scheduler } from '../../orchestrator/scheduler/scheduler.ts';
import { type LoadedSpec, parseConfigText } from '../../orchestrator/spec/load-spec.ts';
import { connectRedis, waitReady } from '../../store/connect.ts';
import { ExperimentStore, TERMINAL_EXPERIMENT_STATES } from '../../store/experiment-store.ts';
import { startRedisServer } from '../../store/redis-server-process.ts';
import { newSubmitToken } from '../../store/submit-token.ts';
import { type BlockTimeline, type ScaleMetrics, scaleMetrics } from './scale-metrics.ts';
import type { FleetConfig, FleetMessage } from './stand-in-fleet.ts';
import type { HostJobRecord } from './stand-in-host.ts';

export interface ScaleOptions {
  hosts: number;
  cardsPerHost: number;
  experiments: number;
  blocksPerExperiment: number;
  /** reps per arm per block (2 arms) */
  reps: number;
  /** how long a block runs on the stand-in hosts, ms, uniform in [lo, hi] */
  runMs: [number, number];
  seed: number;
  /** head-wait slack over the backfill bound: the scheduler's own pass latency */
  slackMs: number;
  /** the scheduler's log level (default silent) */
  logLevel?: Level | 'silent';
  /** how long the whole run may take */
  timeoutMs: number;
  /** stand-in host processes the fleet is split over (default 1: on 2 cores more only contend) */
  fleetProcs?: number;
}

export interface ScaleRun {
  metrics: ScaleMetrics;
  reps: number;
  /** INFO memory used_memory after − before, bytes */
  redisBytes: number;
  /** this process's CPU (the scheduler; the hosts are a child) from its start to the last end, ms */
  cpuMs: number;
  wallMs: number;
  /** the redis-server's CPU over the same span, ms (is Redis the limit?) */
  redisCpuMs: number;
  /** the stand-in hosts' process's CPU over the same span, ms: on real hosts each has its own CPU, here they share this machine's */
  fleetCpuMs: number;
  /** blocks that did not end done */
  notDone: number;
  /** why attempts that did not commit ended (the first few), so a retry is explained */
  lostAttempts: string[];
  /**
   * CPU ms per grant of each process while granting (from the first grant to the last, between
   * 200 ms samples), without the start, the submissions before the first grant and the tail:
   * what bounds the grant rate once it runs (each of the scheduler and redis-server is one thread).
   */
  steady: { grants: number; ms: number; scheduler: number; redis: number; fleet: number };
  /** Redis INFO commandstats over the run (every client: scheduler, hosts, driver): calls and µs per command */
  commands: { command: string; calls: number; usec: number }[];
}

const RANKS = [1, 2, 4, 8];

export function specText(name: string, ranks: number, blocks: number, reps: number): string {
  return [
    `name: ${name}`,
    'design: ab',
    'workload: { runtime: native, backend: cpu, kind: chain, params: { kernels: 4 }, warmup: 1, steps: 4 }',
    'toggles: [graph]',
    'arms:',
    '  - { name: A, toggles: {} }',
    '  - { name: B, toggles: { graph: true } }',
    `reps: ${reps}`,
    `blocks: { count: ${blocks}, ranks: ${ranks} }`,
    'gates: { identity: false }',
    'metric: { name: ms_per_step, better: lower }',
    '',
  ].join('\n');
}

/** A process's user + system CPU so far, ms (Linux /proc; NaN elsewhere). */
export function processCpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

export async function usedMemory(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? NaN);
}

export function startFleet(config: FleetConfig): {
  pid: number | undefined;
  ready: Promise<void>;
  stop: () => Promise<HostJobRecord[]>;
  kill: () => void;
} {
  const child = fork(new URL('./stand-in-fleet.ts', import.meta.url), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = () =>
    new Promise<FleetMessage>((resolve, reject) => {
      child.once('message', (m) => resolve(m as FleetMessage));
      child.once('exit', (code) => reject(new Error(`the stand-in hosts exited (${code})`)));
    });
  const ready = next().then(() => undefined);
  child.send({ config });
  return {
    pid: child.pid,
    ready,
    stop: async () => {
      const got = next();
      child.send({ stop: true });
      const m = await got;
      return 'records' in m ? m.records : [];
    },
    kill: () => void child.kill('SIGKILL'),
  };
}

export async function runScale(o: ScaleOptions): Promise<ScaleRun> {
  const server = await startRedisServer();
  const prefix = 'scale';
  const log = pino({ level: o.logLevel ?? 'silent' });
  const redis = connectRedis(server.url, { log, name: 'bench-driver' });
  const dir = mkdtempSync(join(tmpdir(), 'orch-scale-'));
  const secret = newClusterSecret().toString('hex');
  const submitToken = newSubmitToken();
  const procs = Math.max(1, Math.min(o.fleetProcs ?? 1, o.hosts));
  const fleets = Array.from({ length: procs }, (_, k) => {
    const first = Math.floor((k * o.hosts) / procs);
    const hosts = Math.floor(((k + 1) * o.hosts) / procs) - first;
    return startFleet({
      url: server.url,
      prefix,
      first,
      hosts,
      cardsPerHost: o.cardsPerHost,
      secret,
      heartbeatMs: 1000,
      runMs: o.runMs,
      seed: o.seed,
    });
  });
  const fleetCpu = () => fleets.reduce((ms, f) => ms + processCpuMs(f.pid), 0);
  let scheduler: Scheduler | null = null;
  let sampler: NodeJS.Timeout | undefined;
  let stopped = false;
  try {
    await waitReady(redis);
    await Promise.all(fleets.map((f) => f.ready));
    const random = mulberry32(o.seed);
    const specs: LoadedSpec[] = Array.from({ length: o.experiments }, (_, i) => {
      const ranks = RANKS[Math.floor(random() * RANKS.length)] as number;
      const file = join(dir, `scale-${i}-r${ranks}.yaml`);
      const loaded = parseConfigText(
        file,
        specText(`scale-${i}-r${ranks}`, ranks, o.blocksPerExperiment, o.reps),
        'experiment',
      );
      if (loaded.kind !== 'experiment') throw new Error('not an experiment');
      return loaded;
    });

    const cpu0 = process.cpuUsage();
    const redisCpu0 = processCpuMs(server.child.pid);
    const fleetCpu0 = fleetCpu();
    const t0 = Date.now();
    const samples: { t: number; s: number; r: number; f: number }[] = [];
    const sample = () => {
      const u = process.cpuUsage();
      samples.push({ t: Date.now(), s: (u.user + u.system) / 1000, r: processCpuMs(server.child.pid), f: fleetCpu() });
    };
    sampler = setInterval(sample, 200);
    scheduler = new Scheduler({ url: server.url, prefix, log, secret: Buffer.from(secret, 'utf8'), submitToken });
    scheduler.start();
    const leader = scheduler;
    while (!leader.isLeader) await new Promise((r) => setTimeout(r, 20));
    // after every connection is open: what grows from here is the experiments' data
    const before = await usedMemory(redis);
    await redis.config('RESETSTAT');
    const ids: string[] = [];
    for (const loaded of specs) ids.push((await submitExperiment({ redis, prefix, loaded, submitToken })).id);

    const store = new ExperimentStore(redis, prefix);
    for (;;) {
      const states = await Promise.all(ids.map((id) => store.state(id)));
      if (states.every((s) => s !== null && TERMINAL_EXPERIMENT_STATES.has(s))) break;
      if (Date.now() - t0 > o.timeoutMs)
        throw new Error(
          `not every experiment ended within ${o.timeoutMs} ms: ${states.filter((s) => s === 'done').length}/${ids.length} done`,
        );
      // slow: this process is the scheduler's, and its CPU is what is measured
      await new Promise((r) => setTimeout(r, 1000));
    }
    clearInterval(sampler);
    sample();
    const wallMs = Date.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const redisCpuMs = processCpuMs(server.child.pid) - redisCpu0;
    const fleetCpuMs = fleetCpu() - fleetCpu0;
    const after = await usedMemory(redis);
    const commands = [...(await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)].map(
      (m) => ({ command: m[1] as string, calls: Number(m[2]), usec: Number(m[3]) }),
    );

    const blocks: BlockTimeline[] = [];
    let notDone = 0;
    const lostAttempts: string[] = [];
    for (const id of ids) {
      const exp = await store.get(id);
      if (!exp) throw new Error(`experiment ${id} is gone`);
      for (const b of await store.blocks(id)) {
        if (b.phase !== 'done') notDone++;
        for (const a of b.attempts)
          if (a.outcome !== 'committed' && lostAttempts.length < 5)
            lostAttempts.push(`${id}.b${b.block}-a${a.attempt}: ${a.outcome}: ${a.reason ?? ''}`);
        if (b.granted_at === null) continue;
        blocks.push({
          experiment: id,
          block: b.block,
          seq: exp.seq,
          priority: exp.priority,
          ranks: exp.plan.ranks,
          created: exp.created,
          granted_at: b.granted_at,
          expected_ms: b.expected_ms ?? 0,
          attempts: b.attempts.length,
        });
      }
    }
    const grantTimes = blocks.map((b) => b.granted_at);
    const [g0, g1] = [Math.min(...grantTimes), Math.max(...grantTimes)];
    const a = samples.find((x) => x.t >= g0) ?? samples[0]!;
    const b = [...samples].reverse().find((x) => x.t <= g1) ?? samples[samples.length - 1]!;
    const n = grantTimes.filter((t) => t > a.t && t <= b.t).length;
    const steady = {
      grants: n,
      ms: b.t - a.t,
      scheduler: (b.s - a.s) / n,
      redis: (b.r - a.r) / n,
      fleet: (b.f - a.f) / n,
    };
    await scheduler.stop();
    stopped = true;
    const jobs = (await Promise.all(fleets.map((f) => f.stop()))).flat();
    return {
      metrics: scaleMetrics(blocks, jobs, o.hosts * o.cardsPerHost, o.slackMs),
      reps: blocks.length * 2 * o.reps,
      redisBytes: after - before,
      cpuMs: (cpu.user + cpu.system) / 1000,
      wallMs,
      redisCpuMs,
      fleetCpuMs,
      notDone,
      lostAttempts,
      steady,
      commands,
    };
  } finally {
    clearInterval(sampler);
    if (scheduler && !stopped) await scheduler.stop().catch(() => undefined);
    for (const f of fleets) f.kill();
    redis.disconnect();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
