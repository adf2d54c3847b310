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
 * nvidia-smi on CPU cards; default 0).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Card } from '../jobs/card.ts';
import { median } from '../orchestrator/stats/descriptive.ts';
import { quantile, type BusyShareRow } from '../orchestrator/stats/busy-share.ts';
import { connectRedis, waitReady } from '../store/connect.ts';
import { startRedisServer } from '../store/redis-server-process.ts';
import { discoverCards } from '../worker/discover-cards.ts';
import { GraphrtRunner } from '../worker/graphrt-runner.ts';
import type { RankRunner } from '../worker/rank-runner.ts';
import { BlockHarness, cpuCards } from './lib/block-harness.ts';
import { FreshPerRepRunner } from './lib/fresh-rank-runner.ts';
import { TimingRankRunner, type OpStamps } from './lib/timing-rank-runner.ts';

const env = process.env;
const GRAPHRT = env.GRAPHRT ?? 'native/build/graphrt';
const BACKEND = (env.BENCH_BACKEND ?? 'cpu') as 'cpu' | 'cuda';
const BLOCKS = Number(env.BENCH_BLOCKS ?? 3);
const REPS = Number(env.BENCH_REPS ?? 8);
const STEPS = Number(env.BENCH_STEPS ?? 10);
const HIDDEN = Number(env.BENCH_HIDDEN ?? 64);
const PROBE_MS = Number(env.BENCH_PROBE_MS ?? 0);
const MODES = (env.BENCH_MODES ?? 'resident,fresh').split(',') as ('resident' | 'fresh')[];

interface Cell {
  mode: 'resident' | 'fresh';
  arm: 'eager' | 'graph';
  rows: BusyShareRow[];
  gaps: number[];
  split: { back: number[]; worker: number[]; out: number[]; written: number[] };
}

const ms = (ns: number) => ns / 1e6;
const f = (x: number | null | undefined, d = 1) => (x === null || x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(d));

async function cardsFor(): Promise<Card[]> {
  return BACKEND === 'cpu' ? cpuCards(1) : discoverCards('bench', { cards: [env.BENCH_GPU ?? '0'] });
}

/** The worker-side split of each gap between consecutive reps of one rank. */
function split(stamps: OpStamps[], written: Map<string, number>, into: Cell['split']): void {
  const reps = stamps.filter((s) => s.t_start_ns !== null && s.t_end_ns !== null && s.answered !== null);
  for (let i = 1; i < reps.length; i++) {
    const a = reps[i - 1] as OpStamps;
    const b = reps[i] as OpStamps;
    into.back.push(ms((a.answered as number) - (a.t_end_ns as number)));
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
  const harness = new BlockHarness(redis, 'bench', lockDir, PROBE_MS);
  const cards = await cardsFor();
  const cells: Cell[] = [];
  try {
    let block = 0;
    for (const mode of MODES) {
      for (const arm of ['eager', 'graph'] as const) {
        const cell: Cell = { mode, arm, rows: [], gaps: [], split: { back: [], worker: [], out: [], written: [] } };
        for (let b = 0; b < BLOCKS; b++) {
          const timing = new TimingRankRunner(new GraphrtRunner(GRAPHRT));
          const runner: RankRunner = mode === 'fresh' ? new FreshPerRepRunner(timing) : timing;
          const r = await harness.run(runner, cards, {
            experiment: 'busy', block: block++, spec_hash: 'bench',
            workload: { runtime: 'native', backend: BACKEND, kind: 'decode', params: { layers: 4, kernels_per_layer: 12, hidden: HIDDEN, max_pos: 64 }, warmup: 2, steps: STEPS },
            arms: [{ name: arm, toggles: { graph: arm === 'graph' } }],
            sequence: Array.from({ length: REPS }, () => arm),
            gates: { identity: arm === 'graph' ? { replays: 3 } : null, aa: false },
            warmup: 2, steps: STEPS, foreign_process: 'fail',
          } as never);
          cell.rows.push(r.row);
          split(timing.stamps, r.written, cell.split);
          const spans = timing.stamps.filter((s) => s.t_start_ns !== null).sort((x, y) => (x.t_start_ns as number) - (y.t_start_ns as number));
          for (let i = 1; i < spans.length; i++) cell.gaps.push(ms((spans[i]!.t_start_ns as number) - (spans[i - 1]!.t_end_ns as number)));
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
  console.log(`backend ${BACKEND}, graphrt ${GRAPHRT}; decode hidden ${HIDDEN}, ${REPS} reps × (2 warm-up + ${STEPS} steps) per block, ${BLOCKS} blocks per row; foreign-process look +${PROBE_MS} ms; medians over blocks, gaps pooled`);
  console.log('\nworker-side split of the gap between two reps (ms, p50): rank→worker = rep end → its line parsed; worker = parsed → next request written; worker→rank = written → next rep start; events in Redis = parsed → that rep line appended (off the path)');
  const head = ['mode', 'arm', 'rank→worker', 'worker', 'worker→rank', 'events in Redis'];
  console.log(head.join(' | '));
  for (const c of cells) console.log([c.mode, c.arm, f(med(c.split.back), 2), f(med(c.split.worker), 2), f(med(c.split.out), 2), f(med(c.split.written), 2)].join(' | '));
  console.log('\ncard busy share per block');
  console.log(['mode', 'arm', 'blocks', 'leased s', 'step share %', 'rep share %', 'gap p50 ms', 'gap p99 ms'].join(' | '));
  for (const c of cells) {
    console.log([
      c.mode, c.arm, String(c.rows.length), f(med(c.rows.map((r) => r.leased_ms / 1000)), 2),
      f(100 * (med(c.rows.map((r) => r.step_share)) ?? NaN)), f(100 * (med(c.rows.map((r) => r.rep_share ?? NaN)) ?? NaN)),
      f(med(c.gaps), 2), f(c.gaps.length ? quantile(c.gaps, 0.99) : null, 2),
    ].join(' | '));
  }
  const cell = (m: string, a: string) => cells.find((c) => c.mode === m && c.arm === a);
  if (MODES.includes('fresh') && MODES.includes('resident')) {
    console.log('\nfresh process per rep ÷ resident ranks');
    console.log(['arm', 'gap p50 ×', 'step share ×'].join(' | '));
    for (const a of ['eager', 'graph']) {
      const fr = cell('fresh', a)!;
      const re = cell('resident', a)!;
      console.log([a, f((med(fr.gaps) ?? NaN) / (med(re.gaps) ?? NaN), 2), f((med(fr.rows.map((r) => r.step_share)) ?? NaN) / (med(re.rows.map((r) => r.step_share)) ?? NaN), 2)].join(' | '));
    }
  }
}

await main();
