/**
 * The chaos suite: one fault per scenario against real processes — a redis-server, the
 * production Scheduler (in this process, or two `orch serve` processes where the leader dies),
 * `orch worker` processes with fixture ranks (or graphrt's CPU backend) — while card-monitor.ts
 * watches the card locks, the ranks, their CPU and every process's peak memory from outside.
 * The fixture ranks burn the CPU for each rep (FIXTURE_BURN) and plant a step time per arm
 * (FIXTURE_ARM_MS), so a rank left running without its lease costs measured CPU, and a rep
 * stored under the wrong arm shows. After each scenario one line: planned reps, measured, failed
 * with a reason, measured twice (rep-ledger.ts: from the rep lines of the event stream),
 * misattributed, overlaps, unleased rank CPU, peak memory, processes left behind; the markdown
 * table of all of them at the end. Asserted for each: nothing measured twice, nothing stored
 * under another request or arm, no overlap, unleased rank CPU under half a lease TTL of one core,
 * the worker and every rank under their memory ceilings, nothing left behind, every planned rep
 * measured once or failed with a reason.
 *
 * CHAOS_SIZE=full (npm run chaos): more blocks and reps, a 500 MiB line; the default (ci) is the
 * reduced run of `npm test`.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { BlockJob } from '../../jobs/block-job.ts';
import { newClusterSecret, signJob } from '../../jobs/grant.ts';
import { plannedReps, repKey } from '../../jobs/rep-ref.ts';
import { type ExperimentRecord, ExperimentStore } from '../../store/experiment-store.ts';
import { hostJobId, hostQueue, orchKeys } from '../../store/keys.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { ResultStore } from '../../store/result-store.ts';
import {
  abSpec,
  type InProcessScheduler,
  startScheduler,
  submitYaml,
  waitEnded,
} from '../orchestrator/in-process-scheduler.ts';
import { type OrchChild, spawnOrch } from '../orchestrator/orch-cluster.ts';
import { blockJob } from '../utils/block-jobs.ts';
import { readEvents, type StreamEvent, waitForEvents } from '../utils/events.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { startTcpProxy, type TcpProxy } from '../utils/tcp-proxy.ts';
import { waitFor } from '../utils/wait-for.ts';
import { spawnWorker, type WorkerProcess } from '../utils/worker-process.ts';
import { CardMonitor, leftovers, type MonitorReport } from './card-monitor.ts';
import { auditReps, type LedgerRow } from './rep-ledger.ts';

const FULL = process.env.CHAOS_SIZE === 'full';
const BLOCKS = FULL ? 10 : 3;
const REPS = FULL ? 4 : 2;
const HUGE_MB = FULL ? 500 : 96;
const HB = 400;
/** the worker's lease TTL (2 × heartbeat) */
const TTL = 2 * HB;
const HOST = 'h1';
const CARDS = ['cpu:0', 'cpu:1'];
const LEASE_CARDS = CARDS.map((c) => `${c}@${HOST}`);
/** the span of a fault that lasts: past the lease TTL by a margin */
const FAULT_MS = 3 * TTL;
/**
 * The span of a lease-loss fault that hits mid-rep: a rank left running past its lease burns for
 * the rest of it, 4 TTLs — enough CPU to stand out on a machine loaded six-fold (a sixth of a
 * core each), while a rank killed at the worker's deadline burns none.
 */
const LEASE_FAULT_MS = 5 * TTL;
/** a fixture rep's span (each one burns it on the CPU) */
const REP_MS = 150;
/**
 * A rep of the lease-loss scenarios (3 reps an arm): the fault hits in a block's first rep, and
 * the block's reps left (3.5 s) run through most of the fault, so a rank the worker did not kill
 * at its lease's end keeps burning CPU for the rest of it.
 */
const LONG_REP_MS = 700;
/** the planted step time per arm (FIXTURE_ARM_MS): a rep stored under the other arm is seen */
const PLANTED = new Map([
  ['A', 2],
  ['B', 3],
]);
/**
 * Unleased rank CPU allowed: half a lease TTL of one core. The worker kills its ranks at its own
 * deadline, no later than the lease expires in Redis; what is left is the sampling (25 ms) and
 * the kill's latency. A rank left running bills a core for the rest of the fault.
 */
const UNLEASED_CPU_S = TTL / 2000;
/**
 * Peak resident memory (VmHWM) ceilings. The worker's (and an `orch serve` or `orch submit`
 * process's): its own heap with a 1 MiB line buffer and a 16 KiB event cap, whatever a rank
 * prints (the 96 MiB line of the ci size held whole is ~300 MiB more: buffers, their
 * concatenation, its string). A fixture rank's: node itself.
 */
const WORKER_MIB = 256;
const RANK_MIB = 128;
const GRAPHRT = fileURLToPath(new URL('../../native/build/graphrt', import.meta.url));
/** a graphrt CPU rep of the chain workload of ~0.5-1 s on this machine (4096 kernels × 120 steps) */
const GRAPHRT_WORKLOAD = 'params: { kernels: 4096 }, warmup: 1, steps: 120';

interface Row extends LedgerRow {
  /** rep lines the stream holds twice, byte for byte (rep-ledger.ts: appends are at least once) */
  resent: number;
  misattributed: number;
  overlaps: number;
  unleasedCpuS: number;
  unleasedAliveS: number;
  workerMiB: number;
  /** `orch serve` and `orch submit` processes, where the scenario runs them (0: none) */
  orchMiB: number;
  rankMiB: number;
  leftBehind: number;
  /** findings of the rep ledger and the scenario's own checks */
  detail: string[];
}

interface Ctx {
  server: RedisServerProcess;
  redis: Redis;
  prefix: string;
  dir: string;
  lockDir: string;
  workers: WorkerProcess[];
  serves: OrchChild[];
  sched: InProcessScheduler | null;
  proxy: TcpProxy | null;
  /** the experiment's id once submitted */
  id: string;
  exp: ExperimentRecord | null;
  /** `orch submit` of the experiment where the scenario submits through the CLI */
  submit: OrchChild | null;
  startWorker(o?: { env?: Record<string, string>; viaProxy?: boolean }): Promise<WorkerProcess>;
  /** resolves once `n` reps are measured */
  measured(n: number): Promise<void>;
  /** resolves with the first rep line in the stream: a block is in its reps */
  repAnswered(): Promise<StreamEvent>;
  /** a live rank pid */
  rankPid(): Promise<number>;
  /** the rank processes alive now, read from /proc at the call */
  liveRanks(): number[];
  /** the host queue's handle (closed with the scenario) */
  queue(): Queue;
}

interface Scenario {
  fault: string;
  blocks?: number;
  reps?: number;
  repMs?: number;
  redisConfig?: (dir: string) => Record<string, string>;
  workerEnv?: Record<string, string>;
  /** the rank binary (default: the fixture rank) */
  graphrt?: string;
  /** the spec's workload line, for graphrt ranks */
  workload?: string;
  viaProxy?: boolean;
  /** every planned rep is measured: the fault only costs retries */
  lossless?: boolean;
  /** two `orch serve` processes instead of the in-process scheduler */
  serves?: boolean;
  /** submitted with `orch submit` (a process that must end), not in this process */
  cliSubmit?: boolean;
  /** the experiment vanishes with Redis's data: the scheduler's report ends the scenario */
  dataLost?: boolean;
  /**
   * Rank-seconds a rank may stay alive unleased, asserted where the worker can act (it runs, its
   * deadline fires): a rank left alive holds the card (its lock, a GPU's memory) even idle. Not
   * asserted elsewhere: a stopped worker cannot end its ranks (they idle, no request comes).
   */
  unleasedAliveS?: number;
  /** unleased rank CPU allowed, s (default UNLEASED_CPU_S) */
  unleasedAllowS?: number;
  /** the scenario cannot run here (what is missing) */
  skip?: string | false;
  /** a known open hole (what is missing): the scenario runs, its failure is reported, not counted */
  todo?: string;
  fault_(ctx: Ctx): Promise<void>;
  /** after the experiment ended: the scenario's own checks, each finding a line */
  check_?(ctx: Ctx): Promise<string[]>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A copy of a running block's signed host job, as the scheduler enqueued it (grant included). */
async function runningJob(c: Ctx): Promise<BlockJob> {
  const first = await c.repAnswered();
  const job = await c.queue().getJob(hostJobId(c.id, first.block, first.attempt, HOST));
  assert.ok(job, `host job of block ${first.block} attempt ${first.attempt}`);
  return job.data as BlockJob;
}

/** An injected job that must be refused before it runs: it fails, with a failedReason matching `why`. */
async function refused(c: Ctx, jobId: string, why: RegExp): Promise<void> {
  const job = await waitFor(
    `${jobId} ended`,
    async () => {
      const j = await c.queue().getJob(jobId);
      return j && (j.failedReason || j.finishedOn) ? j : null;
    },
    { timeoutMs: 30_000 },
  );
  const got = job.failedReason ?? `it ran to its end: ${JSON.stringify(job.returnvalue)}`;
  assert.match(got, why, `${jobId} was to be refused (${why}), got: ${got.slice(0, 200)}`);
}

/** What the lease-gone scenario deleted, for its check. */
const leaseGone = { epochs: [] as number[], ranksAlive: 0 };

const SCENARIOS: Scenario[] = [
  {
    fault: 'kill -9 of a worker',
    // its blocks are lost attempts, retried: a replacement that came back at once made BullMQ
    // fail the dead worker's job as unrecoverable (stalled), and the block failed with it
    lossless: true,
    async fault_(c) {
      await c.measured(2);
      const w = c.workers[0]!;
      w.kill();
      await w.exited;
      await c.startWorker();
    },
  },
  {
    fault: 'kill -9 of a rank',
    async fault_(c) {
      await c.measured(2);
      // a rank found live may end (its block done) before the kill reaches it: then the next one
      await waitFor(
        'a live rank killed',
        async () => {
          try {
            process.kill(await c.rankPid(), 'SIGKILL');
            return true;
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
            throw err;
          }
        },
        { timeoutMs: 20_000 },
      );
    },
  },
  {
    fault: 'kill -9 of the leader (two orch serve)',
    serves: true,
    async fault_(c) {
      await c.measured(2);
      const leader = c.serves.find((s) => s.out().includes('"event":"leader"'))!;
      leader.child.kill('SIGKILL');
      await leader.exited;
    },
  },
  {
    fault: 'Redis paused (SIGSTOP) past the lease TTL, mid-rep',
    unleasedAliveS: UNLEASED_CPU_S,
    blocks: 2,
    reps: 3,
    repMs: LONG_REP_MS,
    async fault_(c) {
      await c.repAnswered();
      c.server.child.kill('SIGSTOP');
      // the fault's span, not a synchronization: Redis answers nothing for 5 lease TTLs
      await sleep(LEASE_FAULT_MS);
      c.server.child.kill('SIGCONT');
    },
  },
  {
    fault: 'Redis restarted with AOF (orch submit waiting)',
    cliSubmit: true,
    redisConfig: (dir) => ({ dir, appendonly: 'yes', appendfsync: 'always' }),
    async fault_(c) {
      await c.measured(2);
      const { port, password } = c.server;
      const config = { dir: join(c.dir, 'aof'), appendonly: 'yes', appendfsync: 'always' };
      await c.server.stop();
      c.server = await startRedisServer({ port, password, config });
    },
    async check_(c) {
      const out: string[] = [];
      // `orch submit` waited through the restart: it ends, with the verdict's exit code (0, 3, 4, 5)
      const end = await Promise.race([c.submit!.exited, sleep(60_000).then(() => null)]);
      if (end === null) out.push('orch submit did not end within 60 s of the experiment');
      else if (![0, 3, 4, 5].includes(end.code ?? -1))
        out.push(`orch submit exited ${end.code ?? end.signal}: ${c.submit!.out().slice(-400)}`);
      if (!existsSync(join(c.dir, 'results', c.id, 'events.jsonl')))
        out.push('orch submit wrote no results/<id>/events.jsonl');
      // the epochs of the grants after the restart are above every one before it
      const starts = (await readEvents(c.redis, c.prefix, c.id))
        .filter((e) => e.event.type === 'worker' && e.event.event === 'block-start')
        .map((e) => e.epoch);
      if (starts.some((e, i) => i > 0 && e <= starts[i - 1]!))
        out.push(`block-start epochs not increasing: ${starts.join(', ')}`);
      // and the next experiment runs to its end on the restarted Redis
      const next = await submitYaml(c.redis, c.prefix, c.dir, 'after-restart', chaosSpec('after-restart', 1, 2));
      const state = await waitEnded(c.redis, c.prefix, next, 60_000).catch((e: Error) => e.message);
      if (state !== 'done') out.push(`the next experiment ended ${state}`);
      const nextStarts = (await readEvents(c.redis, c.prefix, next))
        .filter((e) => e.event.type === 'worker' && e.event.event === 'block-start')
        .map((e) => e.epoch);
      if (nextStarts.some((e) => e <= Math.max(...starts)))
        out.push(
          `the next experiment's epochs ${nextStarts.join(', ')} are not above the first's (${Math.max(...starts)})`,
        );
      return out;
    },
  },
  {
    fault: 'Redis restarted without persistence',
    dataLost: true,
    async fault_(c) {
      await c.measured(2);
      const { port, password } = c.server;
      await c.server.stop();
      c.server = await startRedisServer({ port, password });
    },
  },
  {
    fault: 'worker stopped (SIGSTOP) past the lease',
    async fault_(c) {
      await c.measured(2);
      const w = c.workers[0]!;
      w.child.kill('SIGSTOP');
      await sleep(FAULT_MS);
      w.child.kill('SIGCONT');
    },
  },
  {
    fault: 'worker cut off from Redis (TCP proxy black hole), mid-rep',
    unleasedAliveS: UNLEASED_CPU_S,
    viaProxy: true,
    blocks: 2,
    reps: 3,
    repMs: LONG_REP_MS,
    async fault_(c) {
      await c.repAnswered();
      c.proxy!.blackhole(true);
      await sleep(LEASE_FAULT_MS);
      c.proxy!.blackhole(false);
    },
  },
  {
    fault: 'worker cut off from Redis mid-rep, graphrt CPU ranks',
    unleasedAliveS: UNLEASED_CPU_S,
    viaProxy: true,
    blocks: 2,
    reps: 3,
    graphrt: GRAPHRT,
    workload: GRAPHRT_WORKLOAD,
    skip: !existsSync(GRAPHRT) && !process.env.CI && 'native/build/graphrt is not built',
    async fault_(c) {
      await c.repAnswered();
      c.proxy!.blackhole(true);
      await sleep(LEASE_FAULT_MS);
      c.proxy!.blackhole(false);
    },
  },
  {
    fault: 'a lease gone from Redis mid-rep (a revocation whose message was lost)',
    blocks: 2,
    // 4 reps an arm: the 4.9 s of reps left after the first are what a rank left running burns
    reps: 4,
    repMs: LONG_REP_MS,
    // the worker learns it at its next renew: up to one renew period (HB) of each rank's CPU is
    // the design's (the full-size run measured 0.46 s for the two)
    unleasedAllowS: (2 * HB) / 1000,
    // and as long alive, with one more renew period each for the kill: CPU alone cannot tell on a
    // starved machine (the mutation check runs this at nice 19 beside the other test files; a
    // rank left running there for 24 s of reps got under 0.8 s of CPU), wall time can
    unleasedAliveS: (4 * HB) / 1000,
    async fault_(c) {
      await c.repAnswered();
      // both blocks' (one per card), each epoch noted: its attempt must fail at the renew
      const keys = LEASE_CARDS.map((card) => orchKeys(c.prefix).lease(card));
      const epochs = await Promise.all(keys.map((k) => c.redis.hget(k, 'epoch')));
      await c.redis.del(...keys);
      leaseGone.epochs = epochs.flatMap((e) => (e === null ? [] : [Number(e)]));
      leaseGone.ranksAlive = c.liveRanks().length;
    },
    async check_(c) {
      // Unleased time alone cannot tell on a starved machine: a fault that lands after the ranks
      // ended (CI once let the refused-renew mutant pass so) leaves none. The renew's own
      // refusal is what this scenario is for, and it names itself in the failed attempt.
      if (leaseGone.epochs.length === 0 || leaseGone.ranksAlive === 0)
        return [
          `the fault missed the gang: ${leaseGone.epochs.length} lease(s) deleted, ${leaseGone.ranksAlive} rank(s) alive at the deletion`,
        ];
      const failed = (await readEvents(c.redis, c.prefix, c.id)).filter(
        (e) => e.event.type === 'worker' && e.event.event === 'block-failed',
      );
      return leaseGone.epochs.flatMap((epoch) => {
        const why = failed.filter((e) => e.epoch === epoch).map((e) => String(e.event.reason));
        return why.some((r) => /^lease of card \S+ lost \(/.test(r))
          ? []
          : [`the attempt of epoch ${epoch} did not fail at its renew (it ended: ${why.join('; ') || 'not failed'})`];
      });
    },
  },
  {
    fault: 'injected host job without a valid grant',
    async fault_(c) {
      await c.measured(1);
      // a payload for a card this experiment uses, by its real epoch: only the grant is missing
      const lease = await c.redis.hget(`${c.prefix}:lease:${LEASE_CARDS[0]}`, 'epoch');
      const job = blockJob({
        experiment: c.id,
        block: 0,
        attempt: 99,
        epoch: Number(lease ?? 1),
        host: HOST,
        cards: [LEASE_CARDS[0]!],
      });
      await c.queue().add('block', job, { jobId: `${c.id}.injected`, attempts: 1 });
      await refused(c, `${c.id}.injected`, /carries no grant; nothing ran/);
    },
  },
  {
    fault: 'injected host jobs signed with a wrong key, or altered after signing',
    async fault_(c) {
      const real = await runningJob(c);
      const { grant: _grant, ...unsigned } = real as BlockJob & { grant?: unknown };
      // a grant made with another secret, for the running block's own payload and epoch
      const forged = signJob(hostQueue(HOST), 'block', `${c.id}.wrong-key`, unsigned, newClusterSecret());
      await c.queue().add(forged.name, forged.data, forged.opts);
      // the scheduler's own grant over a payload with another arm's toggles
      const altered = {
        ...real,
        arms: real.arms.map((a) => ({ ...a, toggles: { ...a.toggles, graph: !a.toggles.graph } })),
      };
      await c.queue().add('block', altered, { jobId: `${c.id}.altered`, attempts: 1 });
      await refused(c, `${c.id}.wrong-key`, /the grant does not match the (payload|job)/);
      await refused(c, `${c.id}.altered`, /the grant does not match the (payload|job)/);
    },
  },
  {
    fault: "a replayed signed host job (the running block's, under a new job id)",
    async fault_(c) {
      const real = await runningJob(c);
      await c.queue().add('block', real, { jobId: `${c.id}.replayed`, attempts: 1 });
      await refused(c, `${c.id}.replayed`, /.+/);
    },
    async check_(c) {
      const job = await c.queue().getJob(`${c.id}.replayed`);
      return job?.returnvalue ? [`the replayed job ran to its end: ${JSON.stringify(job.returnvalue)}`] : [];
    },
  },
  {
    fault: 'a signed host job re-added with a repeat option',
    async fault_(c) {
      const real = await runningJob(c);
      // every 300 ms, 3 times: BullMQ adds each repetition as a job of its own, same payload
      const scheduler = `${c.id}.repeated`;
      await c
        .queue()
        .upsertJobScheduler(scheduler, { every: 300, limit: 3 }, { name: 'block', data: real, opts: { attempts: 1 } });
      try {
        await waitFor(
          'a repetition ended',
          async () => (await c.queue().getJobs(['completed', 'failed'])).some((j) => !j.id?.startsWith(`${c.id}.b`)),
          { timeoutMs: 30_000 },
        );
      } finally {
        await c.queue().removeJobScheduler(scheduler);
      }
    },
    async check_(c) {
      const ran = (await c.queue().getJobs(['completed'])).filter((j) => !j.id?.startsWith(`${c.id}.b`));
      return ran.map((j) => `repetition ${j.id} ran to its end: ${JSON.stringify(j.returnvalue)}`);
    },
  },
  {
    fault: `a ${HUGE_MB} MiB output line from a rank`,
    blocks: 1,
    workerEnv: { FIXTURE_BAD: '0:2:huge-line', FIXTURE_HUGE_MB: String(HUGE_MB) },
    async fault_() {},
  },
  {
    fault: 'a repeated final line',
    blocks: 1,
    workerEnv: { FIXTURE_BAD: '0:2:repeat-final' },
    async fault_() {},
  },
];

/** The suite's A/B spec: the fixture workload, or `workload` (graphrt ranks). */
function chaosSpec(name: string, blocks: number, reps: number, workload?: string): string {
  const spec = abSpec(name, blocks, reps);
  return workload === undefined ? spec : spec.replace('params: { kernels: 4 }, warmup: 1, steps: 2', workload);
}

const T0 = Date.now();
const mark = (what: string) =>
  process.env.CHAOS_DEBUG && console.log(`# chaos +${((Date.now() - T0) / 1000).toFixed(1)} s: ${what}`);

async function runScenario(s: Scenario): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'orch-chaos-'));
  const lockDir = join(dir, 'locks');
  const prefix = freshPrefix('c');
  if (s.redisConfig) mkdirSync(join(dir, 'aof'));
  const server = await startRedisServer(s.redisConfig ? { config: s.redisConfig(join(dir, 'aof')) } : {});
  const redis = client(server.url);
  const monitor = new CardMonitor(redis, prefix, lockDir, LEASE_CARDS);
  const fixtureEnv: Record<string, string> = s.graphrt
    ? {}
    : {
        FIXTURE_REP_MS: String(s.repMs ?? REP_MS),
        FIXTURE_BURN: '1',
        FIXTURE_ARM_MS: [...PLANTED].map(([a, ms]) => `${a}:${ms}`).join(','),
      };
  let queue: Queue | null = null;
  const ctx: Ctx = {
    server,
    redis,
    prefix,
    dir,
    lockDir,
    workers: [],
    serves: [],
    sched: null,
    proxy: null,
    id: '',
    exp: null,
    submit: null,
    async startWorker(o = {}) {
      const url = s.viaProxy ? ctx.proxy!.urlFor(ctx.server.url) : ctx.server.url;
      const w = await spawnWorker({
        redisUrl: url,
        host: HOST,
        prefix,
        cards: CARDS.join(','),
        lockDir,
        heartbeatMs: HB,
        ...(s.graphrt ? { graphrt: s.graphrt } : {}),
        env: { ...fixtureEnv, ...s.workerEnv, ...o.env },
      });
      ctx.workers.push(w);
      monitor.watch(w.child.pid!, 'worker');
      return w;
    },
    async measured(n) {
      await waitFor(
        `${n} reps measured`,
        async () => (await redis.hlen(`${prefix}:experiment:${ctx.id}:results`)) >= n,
        { timeoutMs: 60_000, intervalMs: 20 },
      );
    },
    async repAnswered() {
      const evs = await waitForEvents(
        redis,
        prefix,
        ctx.id,
        'a rep answered',
        (e) => e.some((x) => x.event.type === 'rep'),
        60_000,
      );
      return evs.find((x) => x.event.type === 'rep')!;
    },
    async rankPid() {
      // read afresh on every poll: taken between two blocks, a list of the ranks seen until then
      // holds only ended ones, and waiting on it never finds a live rank (CI: timed out after 10 s)
      return waitFor('a live rank', () => monitor.liveRankPids()[0], { timeoutMs: 10_000 });
    },
    liveRanks() {
      return monitor.liveRankPids();
    },
    queue() {
      queue ??= new Queue(hostQueue(HOST), { connection: redis, prefix });
      return queue;
    },
  };
  try {
    return await observe(s, ctx, monitor, () => queue);
  } finally {
    redis.disconnect();
    await ctx.proxy?.close();
    await ctx.server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the scenario's experiment and fault on `ctx`, tears its processes down, and accounts for its reps. */
async function observe(s: Scenario, ctx: Ctx, monitor: CardMonitor, queue: () => Queue | null): Promise<Row> {
  const { redis, prefix, dir } = ctx;
  const server = ctx.server;
  let report: MonitorReport | null = null;
  let lostReported = false;
  let found: string[] = [];
  const blocks = s.blocks ?? BLOCKS;
  const spec = chaosSpec('chaos', blocks, s.reps ?? REPS, s.workload);
  try {
    monitor.start();
    if (s.viaProxy) ctx.proxy = await startTcpProxy({ port: server.port });
    await ctx.startWorker();
    if (s.serves) {
      const env = { REDIS_URL: server.url, ORCH_PREFIX: prefix, ORCH_LOG: 'warn' };
      for (let i = 0; i < 2; i++) ctx.serves.push(spawnOrch(['serve', '--leader-ttl', '1500', '--json'], env));
      for (const x of ctx.serves) monitor.watch(x.child.pid!, 'orch');
      await waitFor('a leader', () => ctx.serves.some((x) => x.out().includes('"event":"leader"')), {
        timeoutMs: 60_000,
      });
    } else {
      ctx.sched = await startScheduler({ url: server.url, prefix, grantTtlMs: 3000, safetyPollMs: 300 });
    }
    if (s.cliSubmit) {
      writeFileSync(join(dir, 'chaos.yaml'), spec);
      ctx.submit = spawnOrch(['submit', join(dir, 'chaos.yaml'), '--results', join(dir, 'results')], {
        REDIS_URL: server.url,
        ORCH_PREFIX: prefix,
        ORCH_LOG: 'warn',
      });
      monitor.watch(ctx.submit.child.pid!, 'orch');
      ctx.id = await waitFor(
        'orch submit printed the experiment id',
        () => /^experiment (\S+)/m.exec(ctx.submit!.out())?.[1],
        { timeoutMs: 30_000 },
      );
    } else {
      ctx.id = await submitYaml(redis, prefix, dir, 'chaos', spec);
    }
    ctx.exp = await new ExperimentStore(redis, prefix).get(ctx.id);
    mark('submitted');
    await s.fault_(ctx);
    mark('fault done');
    if (s.dataLost) {
      await waitFor(
        'the scheduler reports the experiment lost',
        () => ctx.sched!.log().some((l) => l.msg.includes(`experiment ${ctx.id} failed: it no longer exists`)),
        { timeoutMs: 30_000 },
      );
      lostReported = true;
    } else {
      await waitEnded(redis, prefix, ctx.id, 120_000);
      found = (await s.check_?.(ctx).catch((err: Error) => [`the scenario's check failed: ${err.message}`])) ?? [];
    }
  } finally {
    mark('ended');
    ctx.submit?.child.kill('SIGKILL');
    await queue()?.close();
    await ctx.sched?.stop();
    for (const x of ctx.serves) x.child.kill('SIGKILL');
    await Promise.all(ctx.serves.map((x) => x.exited));
    for (const w of ctx.workers) {
      w.child.kill('SIGCONT');
      w.kill();
    }
    await Promise.all(ctx.workers.map((w) => w.exited));
    ctx.server.child.kill('SIGCONT');
    report = monitor.stop();
  }
  // ranks die with their worker (stdin closes): give them the lease TTL and a loaded machine's margin
  const watched = [...report.rankPids, ...ctx.workers.map((w) => w.child.pid!)];
  let left: number[] = [];
  await waitFor(
    'ranks and workers gone',
    () => {
      left = leftovers(watched, report!.rankPgids);
      return left.length === 0;
    },
    { timeoutMs: 10_000 },
  ).catch(() => undefined);
  for (const pid of left) process.kill(pid, 'SIGKILL');

  mark('torn down');
  const planned = plannedReps(ctx.exp!.plan, 0).length * blocks;
  const watchedRow = {
    overlaps: report.overlaps,
    unleasedCpuS: report.unleasedCpuS,
    unleasedAliveS: report.unleasedAliveS,
    workerMiB: report.peakMiB.get('worker') ?? 0,
    orchMiB: report.peakMiB.get('orch') ?? 0,
    rankMiB: report.rankPeakMiB,
    leftBehind: left.length,
  };
  let row: Row;
  if (s.dataLost) {
    assert.ok(lostReported);
    const gone = (await redis.exists(`${prefix}:experiment:${ctx.id}`)) === 0;
    assert.ok(gone, 'the experiment is gone with the data');
    row = {
      fault: s.fault,
      planned,
      measured: 0,
      failed: planned,
      reasons: 'REDIS_DATA_LOST (experiment gone; reported by the scheduler)',
      twice: 0,
      resent: 0,
      misattributed: 0,
      ...watchedRow,
      detail: [],
    };
  } else {
    const results = new ResultStore(redis, { prefix });
    const committed = await results.results(ctx.id);
    const measured = new Set(Object.keys(committed));
    const failed = await results.failed(ctx.id);
    const states = await new ExperimentStore(redis, prefix).blocks(ctx.id);
    const fields = ctx.exp!.plan.blocks.flatMap((b) => plannedReps(ctx.exp!.plan, b.index).map(repKey));
    const audit = auditReps(
      await readEvents(redis, prefix, ctx.id),
      Object.values(committed),
      s.graphrt ? new Map() : PLANTED,
    );
    const twice =
      fields.filter((f) => measured.has(f) && f in failed).length +
      states.reduce((n, b) => n + Math.max(0, b.attempts.filter((a) => a.outcome === 'committed').length - 1), 0) +
      audit.twice;
    const withReason = fields.filter((f) => !measured.has(f) && (failed[f]?.reason ?? '') !== '');
    const unaccounted = fields.filter((f) => !measured.has(f) && !withReason.includes(f));
    assert.deepEqual(unaccounted, [], `every planned rep measured or failed with a reason (${s.fault})`);
    for (const b of states.filter((x) => x.phase !== 'done'))
      console.log(
        `# chaos: ${s.fault}: block ${b.block} ${b.phase}: ${JSON.stringify(b.attempts.map((a) => [a.attempt, a.outcome, a.reason]))}`,
      );
    const reasons = [...new Set(withReason.map((f) => failed[f]!.reason.replace(/\s+/g, ' ').slice(0, 90)))].join(
      ' / ',
    );
    row = {
      fault: s.fault,
      planned: fields.length,
      measured: fields.filter((f) => measured.has(f)).length,
      failed: withReason.length,
      reasons,
      twice,
      resent: audit.resent,
      misattributed: audit.misattributed,
      ...watchedRow,
      detail: [...audit.detail, ...found],
    };
  }
  const notes = [...report.overlapDetail.slice(0, 3), ...row.detail.slice(0, 6)];
  console.log(`# chaos: ${line(row)}${notes.length ? `; ${notes.join('; ')}` : ''}`);
  return row;
}

function line(r: Row): string {
  return `${r.fault}: planned ${r.planned}, measured ${r.measured}, failed ${r.failed}${r.reasons ? ` (${r.reasons})` : ''}, measured twice ${r.twice}${r.resent ? ` (rep lines re-sent ${r.resent})` : ''}, misattributed ${r.misattributed}, overlaps ${r.overlaps}, unleased rank CPU ${r.unleasedCpuS.toFixed(2)} s (alive ${r.unleasedAliveS.toFixed(2)} s), peak RSS worker ${r.workerMiB.toFixed(0)} MiB / rank ${r.rankMiB.toFixed(0)} MiB${r.orchMiB ? ` / orch ${r.orchMiB.toFixed(0)} MiB` : ''}, left behind ${r.leftBehind}`;
}

function table(rows: Row[]): string {
  const head =
    '| fault | planned | measured | failed (reason) | measured twice | misattributed | overlaps | unleased rank CPU s (alive s) | peak RSS worker / rank (/ orch) MiB | left behind |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |';
  return [
    head,
    ...rows.map(
      (r) =>
        `| ${r.fault} | ${r.planned} | ${r.measured} | ${r.failed}${r.reasons ? ` (${r.reasons.replace(/\|/g, '\\|')})` : ''} | ${r.twice}${r.resent ? ` (re-sent ${r.resent})` : ''} | ${r.misattributed} | ${r.overlaps} | ${r.unleasedCpuS.toFixed(2)} (${r.unleasedAliveS.toFixed(2)}) | ${r.workerMiB.toFixed(0)} / ${r.rankMiB.toFixed(0)}${r.orchMiB ? ` / ${r.orchMiB.toFixed(0)}` : ''} | ${r.leftBehind} |`,
    ),
  ].join('\n');
}

describe(`chaos (${FULL ? 'full' : 'ci'} size)`, () => {
  const rows: Row[] = [];
  after(() => {
    console.log(
      `\n## chaos (${FULL ? 'full' : 'ci'} size: ${BLOCKS} blocks × 2 arms × ${REPS} reps, lease TTL ${TTL} ms)\n\n${table(rows)}\n`,
    );
  });
  const only = process.env.CHAOS_ONLY;
  for (const s of SCENARIOS) {
    if (only && !s.fault.includes(only)) continue;
    test(s.fault, { timeout: 240_000, skip: s.skip ?? false, ...(s.todo ? { todo: s.todo } : {}) }, async () => {
      const row = await runScenario(s);
      rows.push(row);
      assert.equal(row.twice, 0, `measured twice: ${row.detail.join('; ')}`);
      assert.equal(row.misattributed, 0, `reps stored under another request or arm: ${row.detail.join('; ')}`);
      assert.deepEqual(row.detail, [], "the scenario's own checks");
      assert.equal(row.overlaps, 0, 'two processes on one card at once');
      if (s.unleasedAliveS !== undefined)
        assert.ok(
          row.unleasedAliveS <= s.unleasedAliveS,
          `ranks alive unleased for ${row.unleasedAliveS.toFixed(2)} rank-s, over ${s.unleasedAliveS} s`,
        );
      const allowS = s.unleasedAllowS ?? UNLEASED_CPU_S;
      assert.ok(
        row.unleasedCpuS <= allowS,
        `unleased rank CPU ${row.unleasedCpuS.toFixed(2)} s is over ${allowS} s${s.unleasedAllowS === undefined ? ' (half a lease TTL of one core)' : ''}`,
      );
      assert.ok(
        row.workerMiB <= WORKER_MIB,
        `the worker's peak RSS ${row.workerMiB.toFixed(0)} MiB is over its ceiling of ${WORKER_MIB} MiB`,
      );
      assert.ok(
        row.orchMiB <= WORKER_MIB,
        `an orch serve or submit process's peak RSS ${row.orchMiB.toFixed(0)} MiB is over its ceiling of ${WORKER_MIB} MiB`,
      );
      assert.ok(
        row.rankMiB <= RANK_MIB,
        `a rank's peak RSS ${row.rankMiB.toFixed(0)} MiB is over its ceiling of ${RANK_MIB} MiB`,
      );
      assert.equal(row.leftBehind, 0, 'ranks or workers left behind');
      assert.equal(row.measured + row.failed, row.planned);
      if (s.lossless)
        assert.equal(
          row.measured,
          row.planned,
          `every planned rep measured despite the fault (failed: ${row.reasons})`,
        );
    });
  }
});
