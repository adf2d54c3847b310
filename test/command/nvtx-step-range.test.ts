/**
 * NVTX ranges as step delimiters for a per_rep program (run.launch_counts_step_range): the spec
 * field and its checks, the worker's variables, the injection library's NVTX side, and the
 * Launches section. The NVTX side runs for real here: a C program built from
 * test/native/nvtx-steps.c with the toolkit's header-only NVTX loads the library the worker names
 * in NVTX_INJECTION64_PATH (no LD_PRELOAD, no GPU) and the library delimits its ranges: which
 * ranges are steps, and each step's host time (push to pop) shows where it began and ended; the
 * same program also runs as a per_rep rep through the worker's CommandRankRunner on a cuda card. The
 * CUDA counts inside each step need the driver and CUPTI, so the per-step numbers are checked on
 * planted exit lines shaped as the library writes them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pino } from 'pino';
import type { Card } from '../../jobs/card.ts';
import type { CommandRep } from '../../jobs/command-line.ts';
import { SpecError } from '../../jobs/errors.ts';
import { perRepCounts } from '../../jobs/per-rep-counts.ts';
import type { RankLine } from '../../jobs/rank-line.ts';
import { CommandWorkloadSchema } from '../../jobs/spec-schema/command-workload.ts';
import { renderLaunches } from '../../orchestrator/report/render-launches.ts';
import { parseConfigText } from '../../orchestrator/spec/load-spec.ts';
import { LaunchSummaryFold, perRangeSource } from '../../orchestrator/stats/launch-summary.ts';
import { BuildCache } from '../../worker/builds/build-cache.ts';
import { CommandRankRunner } from '../../worker/command/command-rank-runner.ts';
import { injectionEnv } from '../../worker/command/launch-counter.ts';
import { PerRepLaunches } from '../../worker/command/per-rep-launches.ts';
import { armOf } from '../../worker/rank-runner.ts';
import { blockJob } from '../utils/block-jobs.ts';

const LIB = `${process.cwd()}/native/build/liborch_inject.so`;
const NVTX_HEADER = '/usr/local/cuda/include/nvtx3/nvToolsExt.h';
const dir = mkdtempSync(join(tmpdir(), 'orch-nvtx-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** test/native/nvtx-steps.c built here; null (and why) where it cannot be. */
function program(): string {
  const exe = join(dir, 'nvtx-steps');
  if (!existsSync(exe)) {
    const cc = spawnSync('cc', ['-O1', '-I/usr/local/cuda/include', '-o', exe, 'test/native/nvtx-steps.c', '-ldl'], {
      encoding: 'utf8',
    });
    assert.equal(cc.status, 0, cc.stderr);
  }
  return exe;
}

/** One rep of the program under the worker's variables for `range`: the library's raw exit line, and what orch makes of it. */
function rep(range: string, steps: number, excluded = 0) {
  const counting = new PerRepLaunches({ backend: 'cuda', lib: LIB, programEnv: {}, stepRange: range });
  const r = spawnSync(program(), [String(steps)], {
    env: { PATH: process.env.PATH, ...counting.env },
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  const raw = readFileSync(counting.env.ORCH_INJECT_REPORT!, 'utf8');
  return {
    line: JSON.parse(raw) as Record<string, unknown>,
    raw,
    got: counting.read(steps, excluded),
    env: counting.env,
  };
}

const skip = !existsSync(LIB)
  ? `${LIB} is not built`
  : !existsSync(NVTX_HEADER)
    ? `${NVTX_HEADER} is not here (CUDA toolkit)`
    : false;

test('NVTX loads the library the worker names and it delimits the named range: outermost push/pop and start/end are steps, nested and other ranges are not', {
  skip,
}, () => {
  const { line, got, env } = rep('decode_step', 5);
  assert.equal(env.NVTX_INJECTION64_PATH, LIB);
  assert.equal(env.ORCH_INJECT_STEP_RANGE, 'decode_step');
  // 5 push/pop steps (each with "decode_step" nested and "attention" inside), 2 in a domain (one a
  // registered string), 1 start/end; the extra pop is ignored
  assert.deepEqual(
    [line.step_range, line.nvtx, line.range_steps, line.range_dropped, line.other_ranges],
    ['decode_step', 1, 8, 0, ['attention', 'setup']],
  );
  assert.equal((line.range_counts as { kernels: number[] }).kernels.length, 8);
  // each step's host time spans its outermost push to its pop: 5 sleeps of 2 ms (10 ms for the domain steps and start/end);
  // a step closed by a nested pop, or opened again by the nested push, is shorter (a lower bound only:
  // a loaded machine makes sleeps longer, never shorter)
  const ns = line.range_ns as number[];
  assert.equal(ns.length, 8);
  for (const [i, t] of ns.entries()) assert.ok(t >= 10e6, `step ${i}: ${t} ns, less than the 10 ms slept inside it`);
  // no GPU: CUDA never called InitializeInjection, so no counts — the reason, with what NVTX saw
  assert.equal(got.source, 'none');
  assert.match(
    got.source === 'none' ? got.reason : '',
    /^never initialized: the CUDA driver did not call InitializeInjection .*\(NVTX range "decode_step": 8 steps delimited, middle step \d+(\.\d+)? ms host time\)$/,
  );
});

test('a range the program never opens: the reason names the ranges it did, never zeros', { skip }, () => {
  const { line, raw } = rep('decode', 3);
  assert.deepEqual([line.nvtx, line.range_steps, line.other_ranges], [1, 0, ['attention', 'decode_step', 'setup']]);
  // the CUDA side planted as counting (it cannot run here); the NVTX side is the library's own line
  const got = perRepCounts(raw.replace('"initialized":0', '"initialized":1'), 3, '/tmp/r.jsonl', {
    name: 'decode',
    excluded: 0,
  });
  assert.deepEqual(got, {
    source: 'none',
    reason:
      'no NVTX range "decode" was pushed and popped (or started and ended) in the rep; ranges seen: "attention", "decode_step", "setup"',
  });
});

test("through the worker's per_rep runner on a cuda card: the rep's program gets both variables, and its rep line says what NVTX delimited", {
  skip,
}, async () => {
  const exe = program();
  // warm-up 2 + 2 measured metric lines; the program marks 3 + 3 steps of decode_step
  const workload = CommandWorkloadSchema.parse({
    runtime: 'command',
    run: {
      cmd: `${exe} 3 && for i in 0 1 2 3; do echo "{\\"ms\\":1}"; done`,
      launch_counts: true,
      launch_counts_step_range: 'decode_step',
      timeout_s: 60,
    },
    metric_source: { format: 'jsonl', field: 'ms' },
    warmup: 2,
    steps: 2,
  });
  const gpu: Card = { id: 'GPU-nvtx', host: 'h', backend: 'cuda', index: 0, uuid: 'GPU-nvtx', name: 'NVIDIA H200' };
  const j = blockJob({
    experiment: 'nvtx',
    block: 0,
    attempt: 1,
    epoch: 1,
    host: 'h',
    cards: [gpu.id],
    workload,
    warmup: 2,
    steps: 2,
    arms: [{ name: 'eager', toggles: {} }],
    sequence: ['eager'],
  });
  const lines: RankLine[] = [];
  const runner = new CommandRankRunner({ cache: new BuildCache({ root: dir }), injectLib: LIB });
  const rank = runner.start({
    job: j,
    rank: 0,
    world: 1,
    card: gpu,
    lockPath: join(dir, 'card.lock'),
    log: pino({ level: 'silent' }),
    onLine: (l) => lines.push(l),
  });
  await rank.ready;
  const rep = await rank.request({ id: 'b0-a1-rep0', op: 'rep', arm: armOf(j, 'eager') }, 30_000);
  await rank.close(2_000);
  assert.ok(rep.type === 'rep' && 'launches' in rep, JSON.stringify(rep));
  assert.equal(rep.launches?.source, 'none');
  assert.match(
    rep.launches?.source === 'none' ? rep.launches.reason : '',
    /^never initialized: .*\(NVTX range "decode_step": 6 steps delimited, middle step \d+(\.\d+)? ms host time\)$/,
  );
});

const exitLine = (o: { nvtx?: 0 | 1; kernels?: number[]; graphs?: number[]; range?: boolean }) => {
  const k = o.kernels ?? [];
  const z = k.map(() => 0);
  return JSON.stringify({
    abi: 1,
    initialized: 1,
    status: 'counting',
    kernels: 999,
    captured: 0,
    graphs: 0,
    memcpy: 0,
    memset: 0,
    syncs: 0,
    ...(o.range === false
      ? {}
      : {
          step_range: 'decode_step',
          nvtx: o.nvtx ?? 1,
          range_steps: k.length,
          range_dropped: 0,
          range_counts: {
            kernels: k,
            captured: k.map((_, i) => (i === 0 ? 4 : 0)),
            graphs: o.graphs ?? z,
            memcpy: k.map(() => 2),
            memset: z,
            syncs: k.map(() => 1),
          },
          other_ranges: [],
        }),
  });
};

test('per NVTX range: steps of every process in order, the warm-up ranges dropped, and the Launches section says "per NVTX range"', () => {
  const got = perRepCounts(
    `${exitLine({ kernels: [500, 90, 40, 41] })}\n${exitLine({ kernels: [40, 42], graphs: [0, 1] })}\n`,
    6,
    '/tmp/r.jsonl',
    { name: 'decode_step', excluded: 2 },
  );
  assert.deepEqual(got, {
    source: 'cupti-nvtx',
    range: 'decode_step',
    warmup: 2,
    kernels: [40, 41, 40, 42],
    captured: 4,
    graphs: [0, 0, 0, 1],
    memcpy: [2, 2, 2, 2],
    memset: [0, 0, 0, 0],
    syncs: [1, 1, 1, 1],
  });
  const fold = new LaunchSummaryFold();
  fold.add({
    v: 1,
    type: 'rep',
    id: 'r',
    arm: 'eager',
    workload: 'command',
    backend: 'command',
    mode: 'eager',
    warmup: 2,
    steps: 4,
    step_ms: [1],
    step_index: [2],
    excluded: 2,
    wall_ms: 1,
    launches: got,
    final: true,
  } as CommandRep);
  const [row] = fold.rows();
  assert.equal(row!.source, perRangeSource('decode_step'));
  assert.deepEqual(
    [row!.kernels_per_step, row!.graphs_per_step, row!.memcpy_per_step, row!.syncs_per_step, row!.captured],
    [40.5, 0, 2, 1, 4],
  );
  assert.match(
    renderLaunches(fold.rows()),
    /\| eager \| eager \| 1 \| 40\.5 \| 0 \| 2 \| 0 \| 1 \| 4 \| cupti, per NVTX range "decode_step" /,
  );
});

test('per NVTX range, nothing to show: a reason each, never zeros', () => {
  const why = (text: string, excluded = 0) => {
    const got = perRepCounts(text, 4, '/tmp/r.jsonl', { name: 'decode_step', excluded });
    return got.source === 'none' ? got.reason : `counted: ${JSON.stringify(got)}`;
  };
  assert.match(
    why(exitLine({ nvtx: 0 })),
    /^NVTX never loaded orch's injection library, so no range "decode_step" was seen: the program made no NVTX call/,
  );
  assert.match(
    why(exitLine({ range: false })),
    /reported no NVTX steps \(a library built before NVTX step ranges: rebuild native\/\)/,
  );
  assert.equal(
    why(exitLine({ kernels: [9, 9] }), 2),
    'all 2 NVTX ranges "decode_step" fall in the warm-up (the rep\'s first 2 steps are excluded)',
  );
  const short = JSON.parse(exitLine({ kernels: [1, 2] }));
  short.range_steps = 3;
  assert.equal(why(JSON.stringify(short)), '/tmp/r.jsonl: the NVTX step counts do not match range_steps 3');
  // without a step range the same line is still divided per rep, as before
  assert.equal(perRepCounts(exitLine({ kernels: [1] }), 3, '/tmp/r.jsonl').source, 'cupti-rep');
});

test("the worker's variables: NVTX_INJECTION64_PATH beside CUDA_INJECTION64_PATH, and another tool's NVTX library refused", () => {
  const lib = '/opt/orch/liborch_inject.so';
  const choice = { backend: 'cuda' as const, counts: true, traceProbe: false, lib, programEnv: {} };
  assert.deepEqual(injectionEnv({ ...choice, stepRange: 'decode_step' }), {
    CUDA_INJECTION64_PATH: lib,
    NVTX_INJECTION64_PATH: lib,
    ORCH_INJECT_STEP_RANGE: 'decode_step',
  });
  assert.deepEqual(injectionEnv({ ...choice, stepRange: null }), { CUDA_INJECTION64_PATH: lib });
  assert.deepEqual(injectionEnv({ ...choice, backend: 'cpu', stepRange: 'decode_step' }), {});
  assert.throws(
    () =>
      injectionEnv({
        ...choice,
        stepRange: 'decode_step',
        programEnv: { NVTX_INJECTION64_PATH: '/opt/nsight/libToolsInjection64.so' },
      }),
    (e: Error & { code?: string; hint?: string }) =>
      e.code === 'RANK_INJECTION_TAKEN' &&
      /NVTX_INJECTION64_PATH is already \/opt\/nsight\/libToolsInjection64\.so .*NVTX step range "decode_step" needs it and do not replace it/.test(
        e.message,
      ),
  );
  // a program's own NVTX tool without a step range is left alone
  assert.deepEqual(
    injectionEnv({ ...choice, stepRange: null, programEnv: { NVTX_INJECTION64_PATH: '/opt/nsight/x.so' } }),
    { CUDA_INJECTION64_PATH: lib },
  );
});

const spec = (run: string) => `name: t
design: ab
arms: [{ name: eager }, { name: graph, toggles: { GRAPH: true } }]
toggles: [GRAPH]
gates: { identity: false }
workload:
  runtime: command
  run: ${run}
  toggles: { GRAPH: { env: GRAPH, on: "1", off: "0" } }
  metric_source: { format: jsonl, field: ms }
`;
function issues(run: string): string[] {
  try {
    parseConfigText('s.yaml', spec(run), 'experiment');
    return [];
  } catch (e) {
    if (!(e instanceof SpecError)) throw e;
    return e.issues.map((i) => `${i.path}: ${i.message}${i.fix === undefined ? '' : ` — fix: ${i.fix}`}`);
  }
}

test('the spec field: bounded, printable, only with launch counts on a per_rep program, and absent keeps the hash specs had', () => {
  assert.deepEqual(issues('{ cmd: ./decode, launch_counts: true, launch_counts_step_range: decode_step }'), []);
  assert.deepEqual(issues('{ cmd: ./decode, launch_counts_step_range: decode_step }'), [
    'workload.run.launch_counts_step_range: an NVTX step range delimits launch counts, which are off: add launch_counts: true beside it, or remove it',
  ]);
  assert.match(
    issues('{ cmd: ./decode, mode: resident, launch_counts: true, launch_counts_step_range: s }').join('\n'),
    /workload\.run\.launch_counts_step_range: a resident rank's steps are its rank library's step\(\) calls/,
  );
  assert.deepEqual(issues(`{ cmd: ./decode, launch_counts: true, launch_counts_step_range: ${'x'.repeat(129)} }`), [
    'workload.run.launch_counts_step_range: is 129 characters long, at most 128 allowed — fix: an NVTX step range is a name, at most 128 characters (native/limits.json orch.name_length)',
  ]);
  assert.match(
    issues('{ cmd: ./decode, launch_counts: true, launch_counts_step_range: "a\\tb" }').join('\n'),
    /launch_counts_step_range: .*printable ASCII only/,
  );
  assert.match(
    issues('{ cmd: ./decode, launch_counts: true, launch_counts_step_range: ""}').join('\n'),
    /workload\.run\.launch_counts_step_range: must not be empty/,
  );
  assert.deepEqual(
    issues(
      '{ cmd: ./decode, launch_counts: true, launch_counts_step_range: s, env: { NVTX_INJECTION64_PATH: /x.so } }',
    ),
    [
      "workload.run.env.NVTX_INJECTION64_PATH: NVTX_INJECTION64_PATH names another tool's NVTX injection library; orch's NVTX step range needs it and never replaces it: remove it from run.env, or remove launch_counts_step_range (counts per rep ÷ steps)",
    ],
  );
  const hash = (run: string) => (parseConfigText('s.yaml', spec(run), 'experiment') as { hash: string }).hash;
  // measured on main at d38ce4f, before the field existed: an absent field must leave it as it was
  assert.equal(
    hash('{ cmd: ./decode, launch_counts: true }'),
    '5f1284161037c28c3b96ea90e1395919b6379dd8c905c86e2788a6bd85729f5d',
  );
  assert.notEqual(
    hash('{ cmd: ./decode, launch_counts: true, launch_counts_step_range: decode_step }'),
    hash('{ cmd: ./decode, launch_counts: true }'),
  );
});
