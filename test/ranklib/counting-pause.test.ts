/**
 * Counting that stays out of the timed steps (ranklib/PROTOCOL.md "Launch counts and clocks"),
 * for both rank libraries, on a machine without a GPU: a stand-in injection library
 * (test/fixtures/planted-inject/planted_inject.c, LD_PRELOADed as the driver would load the real
 * one) counts the fixture program's launches only while not paused and logs every launch, pause
 * and resume. Shown: with warm-up steps the counts are the warm-up's (`counted: "warmup"`), the
 * library was paused before the first timed step and every timed launch ran paused, and the next
 * rep resumed it at its start; `warmup: 0` counts the timed steps (`counted: "timed"`), never
 * pausing; a library without pause (an older build) and a refused pause count the timed steps.
 * The real library's pause needs CUPTI and a driver: bench/h200/user-rank/counting3.sh measures it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type OrchRankRep, parseOrchRankLine } from '../../jobs/orch-rank-protocol.ts';
import { buildCudaFixtureRank, CUDA, CUDART_DIR, sh } from '../utils/inject-build.ts';

const PLANTED = fileURLToPath(new URL('../fixtures/planted-inject/planted_inject.c', import.meta.url));
const PYTHON_RANK = fileURLToPath(new URL('../fixtures/ranks/launching-rank.py', import.meta.url));

const dir = mkdtempSync(join(tmpdir(), 'orch-counting-pause-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The stand-in built into `dir` (with or without pause and resume); its path. */
function planted(name: string, flags: string[] = []): string {
  const lib = join(dir, `${name}.so`);
  sh('cc', ['-std=c11', '-Wall', '-Wextra', '-Werror', '-shared', '-fPIC', ...flags, PLANTED, '-o', lib]);
  return lib;
}

let cppRank = '';
/** test/fixtures/ranks/launching-rank.cpp built once (orch_rank.h with CUDA on). */
const launchingCppRank = (): string => {
  if (cppRank === '') cppRank = buildCudaFixtureRank(dir, 'launching-rank');
  return cppRank;
};

const RANKS: { name: string; command: () => string[]; skip: string | false }[] = [
  { name: 'orch_rank.py', command: () => ['python3', PYTHON_RANK], skip: false },
  {
    name: 'orch_rank.h',
    command: () => [launchingCppRank()],
    skip: CUDART_DIR === null ? `no libcudart under ${CUDA}` : false,
  },
];

interface Run {
  reps: OrchRankRep[];
  /** the stand-in's log: every launch (counted or paused), pause and resume, in order */
  log: string[];
}

/** Two reps of `warmup` + `steps` steps through the rank, with `lib` preloaded; its answers and the library's log. */
function run(command: string[], lib: string, warmup: number, env: Record<string, string> = {}): Run {
  const log = join(dir, `log-${Math.random().toString(36).slice(2)}`);
  const request = (id: string) =>
    JSON.stringify({ v: 1, id, op: 'rep', arm: 'A', toggles: {}, warmup, steps: 3, seed: 1 });
  const [cmd = '', ...args] = command;
  const r = spawnSync(cmd, args, {
    encoding: 'utf8',
    input: `${request('r0')}\n${request('r1')}\n`,
    env: {
      PATH: process.env.PATH ?? '',
      PYTHONDONTWRITEBYTECODE: '1',
      ORCH_RANK_PROTOCOL: '1',
      CUDA_INJECTION64_PATH: lib,
      LD_PRELOAD: lib,
      PLANTED_INJECT_LOG: log,
      ...env,
    },
  });
  assert.equal(r.status, 0, `${command.join(' ')}: ${r.stdout}${r.stderr}`);
  const lines = r.stdout.trim().split('\n').map(parseOrchRankLine);
  assert.equal(lines[0]?.type, 'hello', r.stdout);
  return { reps: lines.slice(1) as OrchRankRep[], log: readFileSync(log, 'utf8').trim().split('\n') };
}

const times = (n: number, line: string): string[] => Array.from({ length: n }, () => line);
const counts = (counted: 'warmup' | 'timed', n: number) => ({
  source: 'cupti',
  counted,
  kernels: new Array(n).fill(1),
  captured: 0,
  graphs: new Array(n).fill(0),
  memcpy: new Array(n).fill(0),
  memset: new Array(n).fill(0),
  syncs: new Array(n).fill(0),
});

for (const rank of RANKS) {
  describe(`${rank.name}: the warm-up counted, the timed steps paused`, { skip: rank.skip }, () => {
    test('warm-up > 0: the warm-up counted, paused before the first timed step, resumed at the next rep', () => {
      const { reps, log } = run(rank.command(), planted('with-pause'), 2);
      for (const rep of reps) assert.deepEqual(rep.launches, counts('warmup', 2), JSON.stringify(rep));
      const oneRep = [...times(2, 'launch counted'), 'pause', ...times(3, 'launch paused')];
      assert.deepEqual(log, [...oneRep, 'resume', ...oneRep], 'every timed launch ran with the library paused');
    });

    test('warm-up 0: nothing untimed to count, so the timed steps are counted and nothing pauses', () => {
      const { reps, log } = run(rank.command(), planted('with-pause'), 0);
      for (const rep of reps) assert.deepEqual(rep.launches, counts('timed', 3), JSON.stringify(rep));
      assert.deepEqual(log, times(6, 'launch counted'));
    });

    test('a library without pause (an older build), or a refused pause: the timed steps counted, as before', () => {
      const old = run(rank.command(), planted('without-pause', ['-DPLANTED_WITHOUT_PAUSE']), 2);
      for (const rep of old.reps) assert.deepEqual(rep.launches, counts('timed', 3), JSON.stringify(rep));
      assert.deepEqual(old.log, times(10, 'launch counted'));
      const refused = run(rank.command(), planted('with-pause'), 2, { PLANTED_PAUSE_REFUSED: '1' });
      for (const rep of refused.reps) assert.deepEqual(rep.launches, counts('timed', 3), JSON.stringify(rep));
      const oneRep = [...times(2, 'launch counted'), 'pause refused', ...times(3, 'launch counted')];
      assert.deepEqual(refused.log, [...oneRep, ...oneRep]);
    });
  });
}

test('orch_rank::RepCounting: a program timing itself outside orch pauses for its timed steps as a rep does', {
  skip: CUDART_DIR === null ? `no libcudart under ${CUDA}` : false,
}, () => {
  const bin = launchingCppRank();
  const lib = planted('with-pause');
  const log = join(dir, 'log-standalone');
  sh(bin, ['--standalone'], {
    env: { PATH: process.env.PATH ?? '', CUDA_INJECTION64_PATH: lib, LD_PRELOAD: lib, PLANTED_INJECT_LOG: log },
  });
  const oneRep = [...times(2, 'launch counted'), 'pause', ...times(3, 'launch paused')];
  assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), [...oneRep, 'resume', ...oneRep]);
});
