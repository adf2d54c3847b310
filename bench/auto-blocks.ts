/**
 * blocks.reps_per_block: auto against fixed blocks, one spec run twice through `orch submit` (the
 * embedded default): the spec's own blocks (`reps_per_block` = `reps`) and auto. Per run: blocks
 * committed, the card's leased time summed over them, start-up (block-start to every hello) summed
 * and as a share of the leases, busy share (warm-up + measured steps over the leases,
 * orchestrator/stats/busy-share.ts) and the wall time of the submit; the sizing auto chose.
 *
 * Also: the busy share of the blocks after the first (the first block's start-up has nothing
 * before it to overlap with, so it is paid whatever the sizing), how each block's rank started
 * (host phase or in the lease, caches warm or cold) and the A/A interval, where the spec has one.
 *
 * Run: node --import tsx bench/auto-blocks.ts
 * Environment: BENCH_SPEC (a spec file; default: the slow-start fixture, prepare() sleeping
 * BENCH_PREPARE_S, default 0, setup() BENCH_SETUP_S, default 1, each step BENCH_STEP_MS, default 20,
 * test/utils/slow-start-spec.ts, on
 * this machine's cpu cards), BENCH_REPS (default 10), BENCH_BLOCKS (default 12), BENCH_WORK (the
 * working directory, kept: its builds/ and rank-caches/, which a caller may warm first; default a
 * fresh temporary one, removed), BENCH_RUNS (default "fixed auto": the runs, in order). One card (ORCH_CPU_CARDS=1 unless set): blocks one after
 * another, as on one GPU.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { cardTimeOf, readResultsDir } from '../orchestrator/report/results-dir.ts';
import { slowStartSpec } from '../test/utils/slow-start-spec.ts';

const reps = Number(process.env.BENCH_REPS ?? 10);
const blocks = Number(process.env.BENCH_BLOCKS ?? 12);
const keep = process.env.BENCH_WORK;
const work = keep ?? mkdtempSync(join(tmpdir(), 'orch-auto-blocks-'));
mkdirSync(work, { recursive: true });

/** The spec as YAML with blocks.reps_per_block set: `reps` (its own blocks) or auto. */
function specText(perBlock: 'fixed' | 'auto'): string {
  const base = process.env.BENCH_SPEC
    ? (parse(readFileSync(process.env.BENCH_SPEC, 'utf8')) as Record<string, unknown>)
    : (parse(
        slowStartSpec('auto-blocks', {
          prepareS: Number(process.env.BENCH_PREPARE_S ?? 0),
          setupS: Number(process.env.BENCH_SETUP_S ?? 1),
          stepMs: Number(process.env.BENCH_STEP_MS ?? 20),
          tail: `reps: ${reps}\nblocks: { count: ${blocks} }\n`,
        }),
      ) as Record<string, unknown>);
  base.name = `${base.name}-${perBlock}`;
  base.blocks = {
    ...(base.blocks as object | undefined),
    reps_per_block: perBlock === 'auto' ? 'auto' : (base.reps ?? 5),
  };
  return stringify(base);
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;

const rows: string[] = [];
const runs = (process.env.BENCH_RUNS ?? 'fixed auto')
  .split(/\s+/)
  .filter((x): x is 'fixed' | 'auto' => x === 'fixed' || x === 'auto');
for (const perBlock of runs) {
  const file = join(work, `${perBlock}.yaml`);
  writeFileSync(file, specText(perBlock));
  const results = join(work, perBlock);
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['bin/orch.mjs', 'submit', file, '--results', results], {
    encoding: 'utf8',
    env: { ORCH_CPU_CARDS: '1', ORCH_LOG: 'warn', ...process.env, ORCH_BUILD_DIR: join(work, 'builds') },
  });
  const wall = Date.now() - t0;
  const [id] = readdirSync(results);
  if (id === undefined) throw new Error(`${perBlock}: no results (exit ${r.status}): ${r.stdout}${r.stderr}`);
  const dir = readResultsDir(join(results, id));
  const card = cardTimeOf(dir);
  const leased = card.reduce((n, x) => n + x.leased_ms, 0);
  const startup = card.reduce((n, x) => n + (x.ready_ms ?? 0), 0);
  const busyOf = (xs: typeof card) => xs.reduce((n, x) => n + x.step_ms + (x.warmup_ms ?? 0), 0);
  const leasedOf = (xs: typeof card) => xs.reduce((n, x) => n + x.leased_ms, 0);
  const later = card.filter((x) => x.block > 0);
  const started = card
    .map((x) => {
      const r = x.rank_start;
      return r === null ? '?' : `${r.started === 'host phase' ? 'H' : 'L'}${r.caches === null ? '' : r.caches[0]}`;
    })
    .join(' ');
  const aa = dir.summary.analysis.aa?.relative.ci;
  const sizing = dir.summary.analysis.plan.block_sizing?.statement ?? '—';
  rows.push(
    `| ${perBlock} | exit ${r.status} | ${card.length} | ${card.map((x) => x.reps).join(' ')} | ${started} | ${s(leased)} | ${s(startup)} (${pct(startup / leased)}) | ${pct(busyOf(card) / leased)} | ${later.length === 0 ? '—' : pct(busyOf(later) / leasedOf(later))} | ${aa == null ? '—' : `${pct(aa[0])} … ${pct(aa[1])} (width ${pct(aa[1] - aa[0])})`} | ${s(wall)} | ${sizing} |`,
  );
}
console.log(
  '| blocks | submit | committed | reps per block | started (H host phase, L in the lease; w/c caches) | leased | start-up | busy share | busy share after the first block | A/A 95 % CI | wall | sizing |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const row of rows) console.log(row);
if (keep === undefined) rmSync(work, { recursive: true, force: true });
