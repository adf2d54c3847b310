/**
 * orch_rank.h (ranklib/cpp), the C++ rank library, spoken to directly over stdin/stdout as the
 * worker speaks to it (ranklib/PROTOCOL.md): test/fixtures/ranks/host-rank.cpp, a host decode
 * built with g++ and no CUDA, whose graphs are the header's host emulation. Every line it prints
 * must pass the worker's own schema (jobs/orch-rank-protocol.ts). Checked: hello; a printf of the
 * program reaches stderr, never the protocol; eager and graph reps of one seed hash alike step by
 * step, and A/A; the identity gate passes for 7 replays, and the planted stale-input bug fails it
 * at replay 2; mode and graph (fresh, then reused); BAD_REQUEST, UNKNOWN_TOGGLE and a throwing
 * step (STEP_FAILED) answer the request and the rank serves on; stdin closed, exit 0. Then
 * examples/cuda-decode/decode.cu is compiled with nvcc where one is found (it runs on an H200).
 */
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  type OrchRankError,
  type OrchRankHello,
  type OrchRankIdentity,
  type OrchRankLine,
  type OrchRankRep,
  parseOrchRankLine,
} from '../../jobs/orch-rank-protocol.ts';
import { compareIdentity } from '../../jobs/output-hashes.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const INCLUDE = join(ROOT, 'ranklib', 'cpp');
const HOST_RANK = join(ROOT, 'test', 'fixtures', 'ranks', 'host-rank.cpp');
const DECODE = join(ROOT, 'examples', 'cuda-decode', 'decode.cu');

/** One rank process; its stdout read line by line, each line checked against the worker's schema. */
class Rank {
  readonly child: ChildProcessWithoutNullStreams;
  readonly raw: string[] = [];
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly unread: string[] = [];
  private waiting: ((line: string | null) => void) | null = null;
  private ended = false;

  constructor(bin: string, params: Record<string, unknown> = {}) {
    this.child = spawn(bin, [], {
      stdio: 'pipe',
      env: { PATH: process.env.PATH ?? '', ORCH_RANK_PROTOCOL: '1', ORCH_PARAMS: JSON.stringify(params) },
    });
    this.child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    createInterface({ input: this.child.stdout })
      .on('line', (line) => {
        this.raw.push(line);
        this.deliver(line);
      })
      .on('close', () => {
        this.ended = true;
        this.deliver(null);
      });
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  private deliver(line: string | null): void {
    const w = this.waiting;
    this.waiting = null;
    if (w !== null) w(line);
    else if (line !== null) this.unread.push(line);
  }

  /** The next protocol line, validated as the worker validates it. */
  async next(): Promise<OrchRankLine> {
    const line =
      this.unread.shift() ??
      (this.ended ? null : await new Promise<string | null>((resolve) => (this.waiting = resolve)));
    if (line === null) throw new Error(`the rank closed its stdout; stderr: ${this.stderr}`);
    return parseOrchRankLine(line);
  }

  async send(request: Record<string, unknown> | string): Promise<OrchRankLine> {
    this.child.stdin.write(`${typeof request === 'string' ? request : JSON.stringify(request)}\n`);
    return this.next();
  }

  async rep(request: Record<string, unknown>): Promise<OrchRankRep> {
    const line = await this.send(request);
    assert.equal(line.type, 'rep', JSON.stringify(line));
    return line as OrchRankRep;
  }

  async identity(request: Record<string, unknown>): Promise<OrchRankIdentity> {
    const line = await this.send(request);
    assert.equal(line.type, 'identity', JSON.stringify(line));
    return line as OrchRankIdentity;
  }

  async error(request: Record<string, unknown> | string): Promise<OrchRankError> {
    const line = await this.send(request);
    assert.equal(line.type, 'error', JSON.stringify(line));
    return line as OrchRankError;
  }

  /** Closes stdin; the rank's exit. */
  async close(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.stdin.end();
    return this.exited;
  }
}

const rep = (id: string, toggles: Record<string, boolean | string>, extra: Record<string, unknown> = {}) => ({
  v: 1,
  id,
  op: 'rep',
  arm: 'A',
  toggles,
  warmup: 2,
  steps: 6,
  seed: 1,
  ...extra,
});
const identity = (id: string, toggles: Record<string, boolean | string>, replays = 7) => ({
  v: 1,
  id,
  op: 'identity',
  arm: 'G',
  toggles,
  toggle: 'GRAPH',
  replays,
  seed: 1,
});

/** nvcc at CUDA's usual place, else on PATH; null when there is none. */
function findNvcc(): string | null {
  const candidates = [
    '/usr/local/cuda/bin/nvcc',
    ...(process.env.PATH ?? '')
      .split(delimiter)
      .filter((d) => d !== '')
      .map((d) => join(d, 'nvcc')),
  ];
  return candidates.find((p) => existsSync(p)) ?? null;
}

describe('orch_rank.h with a host rank (g++, no CUDA)', () => {
  let dir = '';
  let bin = '';
  const ranks: Rank[] = [];
  const start = (params: Record<string, unknown> = {}) => {
    const r = new Rank(bin, params);
    ranks.push(r);
    return r;
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'orch-cpp-rank-'));
    bin = join(dir, 'host-rank');
    // -Werror: the header must stay free of warnings in the programs that include it.
    const cc = spawnSync(
      'g++',
      ['-O2', '-std=c++17', '-Wall', '-Wextra', '-Wshadow', '-Werror', '-I', INCLUDE, HOST_RANK, '-o', bin],
      { encoding: 'utf8' },
    );
    assert.equal(cc.status, 0, `g++ failed: ${cc.error?.message ?? ''}${cc.stderr}`);
  });

  after(async () => {
    for (const r of ranks) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
    await Promise.all(ranks.map((r) => r.exited));
    rmSync(dir, { recursive: true, force: true });
  });

  test('hello first: who it is, the cpu backend, its toggles and outputs', async () => {
    const r = start();
    const line = await r.next();
    assert.equal(line.type, 'hello');
    const { prepare_ms, setup_ms, ...hello } = line as OrchRankHello;
    assert.ok(typeof prepare_ms === 'number' && typeof setup_ms === 'number', 'prepare() and setup() timed');
    assert.deepEqual(hello, {
      v: 1,
      type: 'hello',
      protocol: 'orch-rank',
      version: 1,
      name: 'host-decode',
      library: 'orch_rank.h 1.0',
      backend: 'cpu',
      device: 'host cpu (a build without CUDA)',
      pid: r.child.pid,
      timing: 'host-clock',
      hash: 'blake2b-64',
      toggles: ['GRAPH', 'STALE_INPUT'],
      outputs: ['logits'],
      final: true,
    });
    assert.deepEqual(await r.close(), { code: 0, signal: null }, 'stdin closed: exit 0');
  });

  test('a printf of the program lands on stderr; stdout holds only protocol lines', async () => {
    const r = start({ CHATTY: true });
    await r.next();
    await r.rep(rep('r0', { GRAPH: true }));
    await r.rep(rep('r1', {}));
    assert.deepEqual(await r.close(), { code: 0, signal: null });
    assert.match(r.stderr, /^host-decode: setup, 3 layers of hidden 16$/m);
    assert.match(r.stderr, /^host-decode: step 5$/m);
    assert.equal(r.raw.length, 3);
    for (const line of r.raw) {
      const o = JSON.parse(line) as { v?: unknown };
      assert.equal(o.v, 1, line);
    }
  });

  test('eager and graph reps of one seed hash alike step by step, A/A too; mode and graph fields', async () => {
    const r = start();
    await r.next();
    const eager = await r.rep(rep('e0', { GRAPH: false }));
    const fresh = await r.rep(rep('g0', { GRAPH: true }));
    const reused = await r.rep(rep('g1', { GRAPH: true }));
    const again = await r.rep(rep('e1', {}));
    assert.deepEqual(
      [eager, fresh, reused, again].map((a) => [a.id, a.arm, a.mode, a.graph]),
      [
        ['e0', 'A', 'eager', null],
        ['g0', 'A', 'graph', 'fresh'],
        ['g1', 'A', 'graph', 'reused'],
        ['e1', 'A', 'eager', null],
      ],
    );
    for (const a of [eager, fresh, reused, again]) {
      assert.equal(a.warmup_ms.length, 2);
      assert.equal(a.step_ms.length, 6);
      assert.ok(a.t_start_ns <= a.t_end_ns);
      assert.deepEqual(a.counters, { launches_per_step: 18 });
    }
    assert.equal(new Set(eager.hashes.map((h) => h.logits)).size, 6, 'each step computes something new');
    assert.deepEqual(fresh.hashes, eager.hashes, 'graph replays compute what eager steps do');
    assert.deepEqual(reused.hashes, eager.hashes);
    assert.deepEqual(again.hashes, eager.hashes, 'A/A: the same request, the same hashes');
    const otherSeed = await r.rep(rep('s2', {}, { seed: 2 }));
    assert.notDeepEqual(otherSeed.hashes, eager.hashes, 'the seed picks the state reset() builds');
  });

  test('identity without the bug: eager equals graph for 7 replays', async () => {
    const r = start();
    await r.next();
    await r.rep(rep('g0', { GRAPH: true })); // a graph captured before: the gate captures afresh anyway
    const gate = await r.identity(identity('i0', { GRAPH: true }));
    assert.deepEqual(
      [gate.id, gate.arm, gate.mode, gate.replays, gate.eager.length, gate.graph.length],
      ['i0', 'G', 'graph', 7, 7, 7],
    );
    assert.deepEqual(compareIdentity(gate.eager, gate.graph, 7, ['logits']), {
      pass: true,
      first_bad_replay: null,
      first_bad_output: null,
    });
    const after = await r.rep(rep('g1', { GRAPH: true }));
    assert.equal(after.graph, 'reused', "the gate's capture is the graph later reps replay");
  });

  test('STALE_INPUT: replay 1 equals eager step 1, replay 2 reads the stale token', async () => {
    const r = start();
    await r.next();
    const gate = await r.identity(identity('i0', { GRAPH: true, STALE_INPUT: true }));
    assert.equal(gate.mode, 'graph');
    assert.equal(gate.graph[0]?.logits, gate.eager[0]?.logits);
    assert.notEqual(gate.graph[1]?.logits, gate.eager[1]?.logits);
    assert.deepEqual(compareIdentity(gate.eager, gate.graph, 7, ['logits']), {
      pass: false,
      first_bad_replay: 2,
      first_bad_output: 'logits',
    });
    const clean = await r.identity(identity('i1', { GRAPH: true }));
    assert.deepEqual(clean.eager, gate.eager, 'the eager side runs with GRAPH off, where the bug does nothing');
  });

  test('BAD_REQUEST and UNKNOWN_TOGGLE answer the request; the rank serves on', async () => {
    const r = start();
    await r.next();
    const notJson = await r.error('{"v":1,"id":"x0",');
    assert.deepEqual([notJson.id, notJson.code, notJson.fatal], [undefined, 'BAD_REQUEST', false]);
    assert.match(notJson.message, /^not a JSON line: /);
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [rep('x1', {}, { extra: 1 }), 'BAD_REQUEST', /unknown field "extra" in a rep request/],
      [{ ...rep('x2', {}), steps: undefined }, 'BAD_REQUEST', /missing field "steps"/],
      [rep('x3', {}, { steps: '6' }), 'BAD_REQUEST', /field "steps" must be an integer, got a string/],
      [rep('x4', {}, { steps: 0 }), 'BAD_REQUEST', /field "steps" must be an integer >= 1, got 0/],
      [rep('x5', {}, { toggles: { GRAPH: 1 } }), 'BAD_REQUEST', /toggle "GRAPH" must be a boolean or a string/],
      [rep('x6', {}, { op: 'probe' }), 'BAD_REQUEST', /unknown op "probe"/],
      [rep('x7', {}, { v: 2 }), 'BAD_REQUEST', /field "v" must be 1/],
      [
        rep('x8', { NOPE: true }),
        'UNKNOWN_TOGGLE',
        /unknown toggle "NOPE"; host-decode understands: GRAPH, STALE_INPUT/,
      ],
      [{ ...identity('x9', { GRAPH: true }), toggle: 'PDL' }, 'UNKNOWN_TOGGLE', /unknown toggle "PDL"/],
    ];
    for (const [request, code, message] of cases) {
      const e = await r.error(request);
      assert.deepEqual([e.id, e.code, e.fatal], [request.id, code, false], JSON.stringify(request));
      assert.match(e.message, message);
    }
    const ok = await r.rep(rep('ok', { GRAPH: 'on' }));
    assert.equal(ok.mode, 'graph', 'a string toggle "on" is on, as orch reads an arm');
    assert.deepEqual(await r.close(), { code: 0, signal: null });
  });

  test('a step that throws: STEP_FAILED for that request, not fatal', async () => {
    const r = start({ THROW_AT: 3 });
    await r.next();
    await r.rep(rep('r0', {}, { warmup: 0, steps: 3 }));
    const e = await r.error(rep('r1', { GRAPH: true }, { warmup: 1, steps: 3 }));
    assert.deepEqual([e.id, e.code, e.fatal], ['r1', 'STEP_FAILED', false]);
    assert.equal(e.message, 'step() (measured step 3) threw: THROW_AT: step 3 throws');
    const ok = await r.rep(rep('r2', { GRAPH: true }, { warmup: 0, steps: 3 }));
    assert.equal(ok.graph, 'reused', 'the graph captured before the failure serves on');
    assert.deepEqual(await r.close(), { code: 0, signal: null });
  });

  test('blank lines are ignored; stdin closed: exit 0 with nothing more said', async () => {
    const r = start();
    await r.next();
    r.child.stdin.write('\n  \n\n');
    assert.deepEqual(await r.close(), { code: 0, signal: null });
    assert.equal(r.raw.length, 1, r.raw.join('\n'));
  });
});

describe('examples/cuda-decode with nvcc', () => {
  const nvcc = findNvcc();
  test('decode.cu compiles for sm_90 without warnings (it runs on an H200, not here)', {
    skip: nvcc === null ? 'no nvcc at /usr/local/cuda/bin or on PATH' : false,
    timeout: 600_000,
  }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-cuda-decode-'));
    try {
      const cc = spawnSync(
        nvcc as string,
        [
          '-O2',
          '-std=c++17',
          '-arch=sm_90',
          '-Werror',
          'all-warnings',
          '-I',
          INCLUDE,
          DECODE,
          '-o',
          join(dir, 'cuda-decode'),
        ],
        { encoding: 'utf8' },
      );
      assert.equal(cc.status, 0, `nvcc failed: ${cc.error?.message ?? ''}${cc.stderr}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
