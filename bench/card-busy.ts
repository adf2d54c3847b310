/**
 * Card busy share and the time between reps, through the real worker path (bench/lib/
 * block-harness.ts: executor, leases, events and commit against a private redis-server, graphrt
 * ranks). Blocks of one arm each, eager and graph, in two modes: resident ranks (one graphrt per
 * card for the block's life, graphs kept) and a fresh graphrt per rep (the ratio's baseline).
 * Definitions of the columns: orchestrator/stats/busy-share.ts. The worker-side split of a gap
 * (rank → worker, worker, worker → rank) is stamped by bench/lib/timing-rank-runner.ts on the
 * same CLOCK_MONOTONIC as graphrt's t_start_ns/t_end_ns.
 *
 * Run: npm run bench -- card-busy
 * Environment: GRAPHRT (default native/build/graphrt), BENCH_BACKEND cpu|cuda (default cpu; cuda
 * uses GPU BENCH_GPU, default 0), BENCH_BLOCKS (blocks per cell, default 3), BENCH_REPS (reps
 * per block, default 8), BENCH_STEPS (default 10), BENCH_HIDDEN (default 64), BENCH_MODES
 * (resident,fresh), BENCH_PROBE_MS (extra ms per foreign-process look, emulating a GPU host's
 * nvidia-smi on CPU cards; default 0). BENCH_MODES may also name `loo`: blocks shaped like a
 * leave-one-out (7 arms: base, all_on, no_graph, no_pdl, no_overlap, no_split_combine, the A/A
 * twin; five capture keys, five identity gates), the start-up that bench/h200/decode-loo-93x30.yaml
 * pays per block; sizes BENCH_LOO_LAYERS (default 24), BENCH_LOO_HIDDEN (default 256), 2 reps
 * per arm, 2 warm-up + BENCH_LOO_STEPS (default 4) steps, identity capture + 3 replays.
 * BENCH_PROBE_SPAWN=1: every foreign-process look runs a process (`true`), the fork and exec
 * that a GPU host's nvidia-smi look costs the worker's thread (Node spawns synchronously).
 * BENCH_QUEUE=0: one request at a time (ranks without RankHandle.queues), the worker as it was
 * before the one-deep pipeline of reps, for a before/after on one tree.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Card } from '../jobs/card.ts';
import { type BusyShareRow, quantile } from '../orchestrator/stats/busy-share.ts';
import { median } from '../orchestrator/stats/descriptive.ts';
import { connectRedis, waitReady } from '../store/connect.ts';
import { startRedisServer } from '../store/redis-server-process.ts';
import { discoverCards } from '../worker/discover-cards.ts';
import { type ForeignProcess, type ForeignProcessProbe, HostForeignProcessProbe } from '../worker/foreign-processes.ts';
import { GraphrtRunner } from '../worker/graphrt-runner.ts';
import type { RankRunner } from '../worker/rank-runner.ts';
import { BlockHarness, cpuCards } from './lib/block-harness.ts';
import { FreshPerRepRunner } from './lib/fresh-rank-runner.ts';
import { SlowProbe, SpawnProbe } from './lib/slow-probe.ts';
import { type OpStamps, TimingRankRunner } from './lib/timing-rank-runner.ts';

const env = process.env;
const GRAPHRT = env.GRAPHRT ?? 'native/build/graphrt';
const BACKEND = (env.BENCH_BACKEND ?? 'cpu') as 'cpu' | 'cuda';
const BLOCKS = Number(env.BENCH_BLOCKS ?? 3);
const REPS = Number(env.BENCH_REPS ?? 8);
const STEPS = Number(env.BENCH_STEPS ?? 10);
const HIDDEN = Number(env.BENCH_HIDDEN ?? 64);
const PROBE_MS = Number(env.BENCH_PROBE_MS ?? 0);
const MODES = (env.BENCH_MODES ?? 'resident,fresh,loo').split(',') as ('resident' | 'fresh' | 'loo')[];
const LOO_LAYERS = Number(env.BENCH_LOO_LAYERS ?? 24);
const LOO_HIDDEN = Number(env.BENCH_LOO_HIDDEN ?? 256);
const LOO_STEPS = Number(env.BENCH_LOO_STEPS ?? 4);
const PROBE_SPAWN = env.BENCH_PROBE_SPAWN === '1';
const QUEUE = env.BENCH_QUEUE !== '0';

/** The leave-one-out's arms over graph, pdl, overlap, split_combine (jobs/plan.ts planArms' shape). */
const LOO_TOGGLES = ['graph', 'pdl', 'overlap', 'split_combine'] as const;
function looArms(): { name: string; toggles: Record<string, boolean> }[] {
  const all = Object.fromEntries(LOO_TOGGLES.map((t) => [t, true]));
  return [
    { name: 'base', toggles: Object.fromEntries(LOO_TOGGLES.map((t) => [t, false])) },
    { name: 'all_on', toggles: all },
    ...LOO_TOGGLES.map((t) => ({ name: `no_${t}`, toggles: { ...all, [t]: false } })),
    { name: 'all_on_aa', toggles: all },
  ];
}

/**
 * The synchronous part of each foreign-process look: what runs on the worker's thread before the
 * look's first await (the card lock read from /proc/locks; on a GPU host nvidia-smi's fork and
 * exec, which Node's spawn does before it returns). The worker can do nothing else meanwhile.
 */
class SyncTimedProbe implements ForeignProcessProbe {
  readonly syncMs: number[] = [];
  constructor(private readonly inner: ForeignProcessProbe) {}
  list(card: Card, lockPath: string, ours: ReadonlySet<number>): Promise<ForeignProcess[]> {
    const t0 = performance.now();
    const p = this.inner.list(card, lockPath, ours);
    this.syncMs.push(performance.now() - t0);
    return p;
  }
}

interface Cell {
  mode: 'resident' | 'fresh' | 'loo';
  arm: 'eager' | 'graph' | 'loo';
  rows: BusyShareRow[];
  gaps: number[];
  split: { back: number[]; worker: number[]; out: number[]; written: number[]; queued: number; gaps: number };
}

const ms = (ns: number) => ns / 1e6;
const f = (x: number | null | undefined, d = 1) =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(d);

async function cardsFor(): Promise<Card[]> {
  return BACKEND === 'cpu' ? cpuCards(1) : discoverCards('bench', { cards: [env.BENCH_GPU ?? '0'] });
}

/**
 * The worker-side split of each gap between consecutive reps of one rank. A rep sent behind the
 * one before (written before that one ended) has no worker turnaround in its gap: it is counted
 * as queued, and its gap is graphrt's alone (answer written, next line read, rep started).
 */
function split(stamps: OpStamps[], written: Map<string, number>, into: Cell['split']): void {
  const reps = stamps.filter((s) => s.t_start_ns !== null && s.t_end_ns !== null && s.answered !== null);
  for (let i = 1; i < reps.length; i++) {
    const a = reps[i - 1] as OpStamps;
    const b = reps[i] as OpStamps;
    into.gaps++;
    into.back.push(ms((a.answered as number) - (a.t_end_ns as number)));
    if (b.requested < (a.answered as number)) {
      into.queued++;
      const w = written.get(a.op);
      if (w !== undefined) into.written.push(ms(w - (a.answered as number)));
      continue;
    }
    into.worker.push(ms(b.requested - (a.answered as number)));
    into.out.push(ms((b.t_start_ns as number) - b.requested));
    const w = written.get(a.op);
    if (w !== undefined) into.written.push(ms(w - (a.answered as number)));
  }
}

async function main(): Promise<void> {
  const server = await startRedisServer();
  const redis = connectRedis(server.url, { log: pino({ level: 'silent' }), name: 'bench' });
  await waitReady(redis);
  const lockDir = mkdtempSync(join(tmpdir(), 'orch-bench-locks-'));
  const looks = new SyncTimedProbe(
    PROBE_SPAWN ? new SpawnProbe(new HostForeignProcessProbe()) : new HostForeignProcessProbe(),
  );
  const harness = new BlockHarness(redis, 'bench', lockDir, PROBE_MS > 0 ? new SlowProbe(looks, PROBE_MS) : looks);
  // BENCH_QUEUE=0: the ranks' handles lose `queues`, so the executor sends one request at a time
  const runnerOf = (): RankRunner => {
    const g = new GraphrtRunner(GRAPHRT);
    return QUEUE ? g : { start: (s) => ({ ...g.start(s), queues: undefined }) };
  };
  const cards = await cardsFor();
  const cells: Cell[] = [];
  try {
    let block = 0;
    for (const mode of MODES) {
      if (mode === 'loo') {
        const cell: Cell = {
          mode,
          arm: 'loo',
          rows: [],
          gaps: [],
          split: { back: [], worker: [], out: [], written: [], queued: 0, gaps: 0 },
        };
        const arms = looArms();
        const names = arms.map((a) => a.name);
        for (let b = 0; b < BLOCKS; b++) {
          const timing = new TimingRankRunner(runnerOf());
          const r = await harness.run(timing, cards, {
            experiment: 'busy',
            block: block++,
            spec_hash: 'bench',
            workload: {
              runtime: 'native',
              backend: BACKEND,
              kind: 'decode',
              params: { layers: LOO_LAYERS, kernels_per_layer: 12, hidden: LOO_HIDDEN, max_pos: 64 },
              warmup: 2,
              steps: LOO_STEPS,
            },
            arms,
            sequence: [...names, ...[...names].reverse()],
            gates: { identity: { replays: 3 }, aa: false },
            warmup: 2,
            steps: LOO_STEPS,
            foreign_process: 'fail',
          } as never);
          cell.rows.push(r.row);
          split(timing.stamps, r.written, cell.split);
          const spans = timing.stamps
            .filter((s) => s.t_start_ns !== null && s.op.includes('rep'))
            .sort((x, y) => (x.t_start_ns as number) - (y.t_start_ns as number));
          for (let i = 1; i < spans.length; i++)
            cell.gaps.push(ms((spans[i]!.t_start_ns as number) - (spans[i - 1]!.t_end_ns as number)));
        }
        cells.push(cell);
        continue;
      }
      for (const arm of ['eager', 'graph'] as const) {
        const cell: Cell = {
          mode,
          arm,
          rows: [],
          gaps: [],
          split: { back: [], worker: [], out: [], written: [], queued: 0, gaps: 0 },
        };
        for (let b = 0; b < BLOCKS; b++) {
          const timing = new TimingRankRunner(runnerOf());
          const runner: RankRunner = mode === 'fresh' ? new FreshPerRepRunner(timing) : timing;
          const r = await harness.run(runner, cards, {
            experiment: 'busy',
            block: block++,
            spec_hash: 'bench',
            workload: {
              runtime: 'native',
              backend: BACKEND,
              kind: 'decode',
              params: { layers: 4, kernels_per_layer: 12, hidden: HIDDEN, max_pos: 64 },
              warmup: 2,
              steps: STEPS,
            },
            arms: [{ name: arm, toggles: { graph: arm === 'graph' } }],
            sequence: Array.from({ length: REPS }, () => arm),
            gates: { identity: arm === 'graph' ? { replays: 3 } : null, aa: false },
            warmup: 2,
            steps: STEPS,
            foreign_process: 'fail',
          } as never);
          cell.rows.push(r.row);
          split(timing.stamps, r.written, cell.split);
          const spans = timing.stamps
            .filter((s) => s.t_start_ns !== null)
            .sort((x, y) => (x.t_start_ns as number) - (y.t_start_ns as number));
          for (let i = 1; i < spans.length; i++)
            cell.gaps.push(ms((spans[i]!.t_start_ns as number) - (spans[i - 1]!.t_end_ns as number)));
        }
        cells.push(cell);
      }
    }
  } finally {
    redis.disconnect();
    await server.stop();
    rmSync(lockDir, { recursive: true, force: true });
  }

  const med = (xs: number[]) => (xs.length ? median(xs) : null);
  console.log(
    `backend ${BACKEND}, graphrt ${GRAPHRT}; decode hidden ${HIDDEN}, ${REPS} reps × (2 warm-up + ${STEPS} steps) per block, ${BLOCKS} blocks per row; foreign-process look +${PROBE_MS} ms${PROBE_SPAWN ? ' + a process spawned' : ''}; requests ${QUEUE ? 'queued one deep' : 'one at a time'}; medians over blocks, gaps pooled`,
  );
  console.log(
    '\nworker-side split of the gap between two reps (ms, p50): rank→worker = rep end → its line parsed; worker = parsed → next request written; worker→rank = written → next rep start (these two over gaps whose request was not queued); queued = gaps whose next request was written before the answer before it was parsed; events in Redis = parsed → that rep line appended (off the path)',
  );
  const head = ['mode', 'arm', 'rank→worker', 'worker', 'worker→rank', 'queued', 'events in Redis'];
  console.log(head.join(' | '));
  for (const c of cells)
    console.log(
      [
        c.mode,
        c.arm,
        f(med(c.split.back), 2),
        f(med(c.split.worker), 2),
        f(med(c.split.out), 2),
        `${c.split.queued}/${c.split.gaps}`,
        f(med(c.split.written), 2),
      ].join(' | '),
    );
  console.log('\ncard busy share per block');
  console.log(
    [
      'mode',
      'arm',
      'blocks',
      'leased s',
      'ranks ready s',
      'gates s',
      'step share % (measured)',
      'busy share % (warm-up + measured)',
      'rep share %',
      'gap p50 ms',
      'gap p99 ms',
    ].join(' | '),
  );
  for (const c of cells) {
    console.log(
      [
        c.mode,
        c.arm,
        String(c.rows.length),
        f(med(c.rows.map((r) => r.leased_ms / 1000)), 2),
        f(med(c.rows.map((r) => (r.ready_ms ?? NaN) / 1000)), 3),
        f(med(c.rows.map((r) => (r.gates_ms ?? NaN) / 1000)), 3),
        f(100 * (med(c.rows.map((r) => r.step_share)) ?? NaN)),
        f(100 * (med(c.rows.map((r) => r.busy_share ?? NaN)) ?? NaN)),
        f(100 * (med(c.rows.map((r) => r.rep_share ?? NaN)) ?? NaN)),
        f(med(c.gaps), 2),
        f(c.gaps.length ? quantile(c.gaps, 0.99) : null, 2),
      ].join(' | '),
    );
  }
  console.log(
    `\nforeign-process looks: ${looks.syncMs.length}, synchronous part (on the worker's thread) p50 ${f(med(looks.syncMs), 2)} ms, p99 ${f(looks.syncMs.length ? quantile(looks.syncMs, 0.99) : null, 2)} ms`,
  );
  const cell = (m: string, a: string) => cells.find((c) => c.mode === m && c.arm === a);
  if (MODES.includes('fresh') && MODES.includes('resident')) {
    console.log('\nfresh process per rep ÷ resident ranks');
    console.log(['arm', 'gap p50 ×', 'step share ×'].join(' | '));
    for (const a of ['eager', 'graph']) {
      const fr = cell('fresh', a)!;
      const re = cell('resident', a)!;
      console.log(
        [
          a,
          f((med(fr.gaps) ?? NaN) / (med(re.gaps) ?? NaN), 2),
          f((med(fr.rows.map((r) => r.step_share)) ?? NaN) / (med(re.rows.map((r) => r.step_share)) ?? NaN), 2),
        ].join(' | '),
      );
    }
  }
}

await main();
