/**
 * The scheduler at scale: 512 cards on 64 hosts, a real Scheduler, the real store and Lua on a
 * private redis-server, and stand-in hosts that do everything a worker does but run ranks
 * (bench/lib/stand-in-host.ts). A seeded mix of 1/2/4/8-rank blocks; see bench/lib/scale-run.ts
 * for the run and bench/lib/scale-metrics.ts for what each column means.
 *
 * Targets (printed, never asserted): ≥ 500 grants/s, ≥ 95 % card utilisation, no block waiting
 * at the head of the queue longer than the backfill guarantee allows.
 *
 * Run: npm run bench -- scheduler-scale
 * Environment: BENCH_HOSTS (64), BENCH_CARDS_PER_HOST (8), BENCH_EXPERIMENTS (48),
 * BENCH_BLOCKS (blocks per experiment, 32), BENCH_REPS (reps per arm, 2), BENCH_RUN_MS
 * (a block's run time on the stand-in hosts, "lo-hi" ms, 20-200), BENCH_RUNS (3),
 * BENCH_SEED (1), BENCH_FLEET_PROCS (stand-in host processes, 1), BENCH_SLACK_MS (pass latency allowed over the backfill bound, 1000),
 * BENCH_LOG (the scheduler's pino level, silent), BENCH_PROFILE=1 (awaited time per store method and grant pass, Redis
 * commands per block).
 */
import { loadavg } from 'node:os';
import type { Level } from 'pino';
import { GrantLoop } from '../orchestrator/scheduler/grant-loop.ts';
import { CardRegistry } from '../store/card-registry.ts';
import { ExperimentStore } from '../store/experiment-store.ts';
import { LeaseStore } from '../store/lease-store.ts';
import { CommandCounter } from './lib/command-counter.ts';
import { MethodTimers } from './lib/method-timers.ts';
import { median, STEADY_WAITING } from './lib/scale-metrics.ts';
import { runScale, type ScaleRun } from './lib/scale-run.ts';

const env = process.env;
const num = (k: string, d: number) => Number(env[k] ?? d);
const [lo, hi] = (env.BENCH_RUN_MS ?? '20-200').split('-').map(Number) as [number, number];
const opts = {
  hosts: num('BENCH_HOSTS', 64),
  cardsPerHost: num('BENCH_CARDS_PER_HOST', 8),
  experiments: num('BENCH_EXPERIMENTS', 48),
  blocksPerExperiment: num('BENCH_BLOCKS', 32),
  reps: num('BENCH_REPS', 2),
  runMs: [lo, hi] as [number, number],
  slackMs: num('BENCH_SLACK_MS', 1000),
  logLevel: (env.BENCH_LOG ?? 'silent') as Level | 'silent',
  timeoutMs: 20 * 60_000,
  fleetProcs: num('BENCH_FLEET_PROCS', 1),
};
const RUNS = num('BENCH_RUNS', 3);
const SEED = num('BENCH_SEED', 1);

const timers = env.BENCH_PROFILE === '1' ? new MethodTimers() : null;
const sent = timers ? new CommandCounter() : null;
sent?.start();
if (timers) {
  timers.wrap('GrantLoop', GrantLoop.prototype, ['pass', 'expectedMs']);
  timers.wrap('ExperimentStore', ExperimentStore.prototype, [
    'active',
    'state',
    'get',
    'blocks',
    'block',
    'transitionBlock',
    'beginAttempt',
  ]);
  timers.wrap('CardRegistry', CardRegistry.prototype, ['liveCards']);
  timers.wrap('LeaseStore', LeaseStore.prototype, ['held', 'leased', 'acquireGang', 'revoke']);
}

const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const ff = (a: number, b: number) => `${f(a)} / ${f(b)}`;
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

const runs: ScaleRun[] = [];
const loads: string[] = [load()];
for (let i = 0; i < RUNS; i++) {
  const r = await runScale({ ...opts, seed: SEED + i });
  runs.push(r);
  loads.push(load());
  const m = r.metrics;
  console.log(
    `run ${i + 1}/${RUNS}: ${m.blocks} blocks in ${f(r.wallMs / 1000)} s; not done ${r.notDone}; retried ${m.retried}; starved ${m.starved.length}; card overlaps ${m.overlaps.length}`,
  );
  for (const s of m.starved.slice(0, 3))
    console.log(
      `  starved: ${s.key} (${s.ranks} ranks) waited ${f(s.wait_ms / 1000, 2)} s at the head; bound ${f(s.bound_ms / 1000, 2)} s`,
    );
  for (const o of m.overlaps.slice(0, 3)) console.log(`  overlap: ${o}`);
  for (const a of r.lostAttempts.slice(0, 3)) console.log(`  attempt not committed: ${a}`);
}

const med = (pick: (r: ScaleRun) => number) => median(runs.map(pick));
const cards = opts.hosts * opts.cardsPerHost;
console.log(
  `\n${cards} cards on ${opts.hosts} hosts; ${opts.experiments} experiments × ${opts.blocksPerExperiment} blocks (ranks 1/2/4/8, seeded), ${2 * opts.reps} reps per block; blocks run ${lo}-${hi} ms; medians of ${RUNS} runs (seeds ${SEED}..${SEED + RUNS - 1})`,
);
console.log(`load average (1/5/15 min) before and after each run: ${loads.join(' | ')}`);
console.log(['metric', 'median', 'target'].join(' | '));
const rows: [string, string, string][] = [
  ['grants/s (median 1 s window, queue non-empty)', f(med((r) => r.metrics.grants_per_s_median)), '≥ 500'],
  ['grants/s (first to last grant)', f(med((r) => r.metrics.grants_per_s_overall)), ''],
  ['card utilisation % (work waiting)', f(100 * med((r) => r.metrics.utilisation)), '≥ 95'],
  ['  held by a host % (job received → release)', f(100 * med((r) => r.metrics.busy)), ''],
  [
    `  steady % (every card granted once → fewer than ${STEADY_WAITING} blocks left)`,
    f(100 * med((r) => r.metrics.steady)),
    '',
  ],
  [
    '  steady window s',
    f(
      med((r) => r.metrics.steadyMs / 1000),
      2,
    ),
    '',
  ],
  [
    'longest 8-rank head wait s',
    f(
      med((r) => (r.metrics.worst8?.wait_ms ?? NaN) / 1000),
      2,
    ),
    '≤ bound',
  ],
  [
    '  its backfill bound s',
    f(
      med((r) => (r.metrics.worst8?.bound_ms ?? NaN) / 1000),
      2,
    ),
    '',
  ],
  ['blocks over bound + slack (all runs)', String(runs.reduce((n, r) => n + r.metrics.starved.length, 0)), '0'],
  ['card held by two gangs (all runs)', String(runs.reduce((n, r) => n + r.metrics.overlaps.length, 0)), '0'],
  [
    'Redis MiB per 10 000 reps',
    f(
      med((r) => ((r.redisBytes / r.reps) * 10_000) / 2 ** 20),
      2,
    ),
    '',
  ],
  ['scheduler CPU % of a core', f(med((r) => (100 * r.cpuMs) / r.wallMs)), ''],
  ['redis-server CPU % of a core', f(med((r) => (100 * r.redisCpuMs) / r.wallMs)), ''],
  [
    'scheduler CPU ms per block',
    f(
      med((r) => r.cpuMs / r.metrics.blocks),
      2,
    ),
    '',
  ],
  [
    'redis-server CPU ms per block',
    f(
      med((r) => r.redisCpuMs / r.metrics.blocks),
      2,
    ),
    '',
  ],
  [
    `stand-in hosts CPU ms per block (${opts.fleetProcs} process(es) for all ${opts.hosts})`,
    f(
      med((r) => r.fleetCpuMs / r.metrics.blocks),
      2,
    ),
    '',
  ],
  [
    'CPU ms per grant while granting (first to last grant): scheduler',
    f(
      med((r) => r.steady.scheduler),
      2,
    ),
    '',
  ],
  [
    '  redis-server',
    f(
      med((r) => r.steady.redis),
      2,
    ),
    '',
  ],
  [
    '  stand-in hosts',
    f(
      med((r) => r.steady.fleet),
      2,
    ),
    '',
  ],
  ['  grants/s one scheduler core could carry (1000 / its ms per grant)', f(med((r) => 1000 / r.steady.scheduler)), ''],
  ['  grants/s one redis-server core could carry', f(med((r) => 1000 / r.steady.redis)), ''],
  ['card cycle ms (median / mean per card and lease):', '', ''],
  [
    '  idle before its first lease: first submission → first grant on the card',
    ff(
      med((r) => r.metrics.gaps.first.median),
      med((r) => r.metrics.gaps.first.mean),
    ),
    '',
  ],
  [
    '  idle: release → next grant on the card',
    ff(
      med((r) => r.metrics.gaps.idle.median),
      med((r) => r.metrics.gaps.idle.mean),
    ),
    '',
  ],
  [
    '  leased: grant → host job received (dispatch)',
    ff(
      med((r) => r.metrics.gaps.dispatch.median),
      med((r) => r.metrics.gaps.dispatch.mean),
    ),
    '',
  ],
  [
    '  leased: received → started (grant checked, first renew)',
    ff(
      med((r) => r.metrics.gaps.start.median),
      med((r) => r.metrics.gaps.start.mean),
    ),
    '',
  ],
  [
    "  leased: the block's run (the stand-in's sleep)",
    ff(
      med((r) => r.metrics.gaps.run.median),
      med((r) => r.metrics.gaps.run.mean),
    ),
    '',
  ],
  [
    '  leased: run end → released (commit, release)',
    ff(
      med((r) => r.metrics.gaps.end.median),
      med((r) => r.metrics.gaps.end.mean),
    ),
    '',
  ],
  ['running % (the runs alone over card-time)', f(100 * med((r) => r.metrics.gaps.running)), ''],
];
for (const row of rows) console.log(row.join(' | '));
if (timers) {
  const last = runs[runs.length - 1]!;
  console.log(
    `\nBENCH_PROFILE: Redis commands per block (INFO commandstats, every client, last run: ${last.metrics.blocks} blocks)`,
  );
  console.log(['command', 'calls per block', 'µs per block', 'µs per call'].join(' | '));
  for (const c of [...last.commands].sort((a, b) => b.usec - a.usec).slice(0, 15))
    console.log(
      [c.command, f(c.calls / last.metrics.blocks, 2), f(c.usec / last.metrics.blocks), f(c.usec / c.calls, 2)].join(
        ' | ',
      ),
    );
  const blocks = runs.reduce((n, r) => n + r.metrics.blocks, 0);
  console.log(
    `\nBENCH_PROFILE: Redis commands sent by this process (the scheduler; the driver's submissions and 1 s polls too), per block, all runs (${blocks} blocks)`,
  );
  console.log(['command', 'per block'].join(' | '));
  for (const c of sent!.table().slice(0, 30)) console.log([c.command, f(c.calls / blocks, 2)].join(' | '));
  console.log("\nBENCH_PROFILE: awaited wall time per method, all runs (the driver's own reads included)");
  console.log(['method', 'calls', 'total s', 'ms per call'].join(' | '));
  for (const t of timers.table())
    console.log([t.name, String(t.calls), f(t.ms / 1000, 2), f(t.ms / t.calls, 2)].join(' | '));
}
