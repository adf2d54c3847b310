/**
 * A throwaway git repository whose commits differ by a known amount of work: a tiny C program
 * whose every step runs ITERS xorshift rounds and prints `step <i> ms <t>`. Branch `main` has
 * `base` rounds per step, branch `branch` has `base·(1 + effect)`: the planted effect is the
 * ratio of the two counts, so a test computes what it expects from them. A step's time is the
 * process's CPU time, not the wall clock: on a CI box shared by many jobs, preemption would
 * otherwise drown a 5 % difference.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SummaryJson, SummaryJsonSchema } from '../../orchestrator/results/summary-schema.ts';
import { type OrchRun, runOrch } from '../utils/orch-run.ts';

export interface PlantedRepo {
  dir: string;
  iters: { main: number; branch: number };
  /** branch / main − 1 from the iteration counts: the relative change a measurement should find. */
  planted: number;
  git(...args: string[]): string;
}

const program = (iters: number) => `#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define ITERS ${iters}L
static volatile unsigned long long sink;
static double now_ms(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(void) {
  const char *e = getenv("ORCH_TOTAL_STEPS");
  int total = e ? atoi(e) : 10;
  unsigned long long x = 88172645463325252ULL;
  for (int s = 0; s < total; ++s) {
    double t0 = now_ms();
    for (long i = 0; i < ITERS; ++i) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; }
    sink = x;
    printf("step %d ms %.4f\\n", s, now_ms() - t0);
    fflush(stdout);
  }
  return 0;
}
`;

export function plantedRepo(opts: { base?: number; effect?: number; brokenBranch?: boolean } = {}): PlantedRepo {
  const dir = join(mkdtempSync(join(tmpdir(), 'orch-planted-')), 'repo');
  spawnSync('mkdir', ['-p', dir]);
  const git = (...args: string[]): string => {
    const r = spawnSync('git', ['-c', 'user.email=t@orch', '-c', 'user.name=orch-test', ...args], {
      cwd: dir,
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };
  const base = opts.base ?? 3_000_000;
  const branch = Math.round(base * (1 + (opts.effect ?? 0.05)));
  git('init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'build.sh'), 'set -e\nmkdir -p out\ncc -O1 -o out/work work.c\necho built out/work\n');
  writeFileSync(join(dir, 'work.c'), program(base));
  git('add', 'build.sh', 'work.c');
  git('commit', '-qm', `work: ${base} rounds per step`);
  git('checkout', '-qb', 'branch');
  writeFileSync(
    join(dir, 'work.c'),
    opts.brokenBranch ? `${program(branch)}\nthis does not compile;\n` : program(branch),
  );
  git('commit', '-qam', `work: ${branch} rounds per step`);
  return { dir, iters: { main: base, branch }, planted: branch / base - 1, git };
}

/** One arm per planted branch, each on its own build (PLANTED_BUILDS). */
export const PLANTED_ARMS = '  - { name: main, build: main }\n  - { name: branch, build: branch }';
export const PLANTED_BUILDS = '  main: { ref: main }\n  branch: { ref: branch }';

/** A fresh build directory (ORCH_BUILD_DIR): each test sees only its own worktrees and logs. */
export const freshBuildDir = (): string => mkdtempSync(join(tmpdir(), 'orch-builds-'));

/** A spec over the planted repository: `arms` lines and `builds` lines given by the test; `gates` a flow map. */
export function plantedSpec(o: {
  name: string;
  builds: string;
  arms: string;
  reps?: number;
  blocks?: number;
  steps?: number;
  gates?: string;
  extra?: string;
  repo?: string;
}): string {
  return `name: ${o.name}
design: ab
${o.repo === undefined ? '' : `repo: ${o.repo}\n`}builds:
${o.builds}
workload:
  runtime: command
  build:
    cmd: sh build.sh
    artifacts: [out/work]
  run:
    cmd: $ORCH_ARTIFACTS/out/work
    timeout_s: 60
  metric_source:
    format: regex
    pattern: 'step (?<step>\\d+) ms (?<value>[0-9.]+)'
    value_group: value
    step_group: step
  warmup: 2
  steps: ${o.steps ?? 15}
arms:
${o.arms}
reps: ${o.reps ?? 6}
blocks: { count: ${o.blocks ?? 2} }
gates: ${o.gates ?? '{ identity: false, aa: true }'}
metric: { name: ms, better: lower }
${o.extra ?? ''}`;
}

/**
 * `orch submit` of a spec written to `file` (the embedded default), results in a fresh directory.
 * `env` adds to the submit's environment; ONE_CARD runs the blocks one after another.
 */
/**
 * The embedded worker with one cpu card: a timed comparison's blocks run one after another. Side
 * by side on this 2-core box, each block's ranks shared the cores with the other's, the worker and
 * the scheduler, and the planted difference read anywhere from 14 % to 74 % for +50 % (and 1.9 % to
 * 7.2 % for +5 %) between runs.
 */
export const ONE_CARD = { ORCH_CPU_CARDS: '1' } as const;

export interface Submitted extends OrchRun {
  results: string;
  dir: string | null;
  summary: SummaryJson | null;
}

export async function submitSpec(
  file: string,
  text: string,
  buildDir: string,
  env: Record<string, string> = {},
): Promise<Submitted> {
  writeFileSync(file, text);
  const results = mkdtempSync(join(tmpdir(), 'orch-results-'));
  const r = await runOrch(['submit', file, '--results', results], { ORCH_BUILD_DIR: buildDir, ...env });
  const [exp] = readdirSync(results);
  const dir = exp === undefined ? null : join(results, exp);
  const summary =
    dir && existsSync(join(dir, 'summary.json'))
      ? SummaryJsonSchema.parse(JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')))
      : null;
  return { ...r, results, dir, summary };
}
