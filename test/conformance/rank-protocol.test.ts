/**
 * The rank protocol's conformance suite: the same requests to every implementation — graphrt
 * (`native/build/graphrt serve`, CPU backend), the Python library (programs/conformance_rank.py
 * through ranklib/python/orch_rank) and the C++ header (programs/conformance_rank.cpp, compiled
 * here with g++, no CUDA) — and the same expected answers, bad inputs included: a bad version, an
 * unknown toggle, a garbage line, a line of 1 MiB + 1 byte (and one of exactly 1 MiB, served), a
 * wrong id, stdin closed. The two libraries also answer the same reps, gates, toggle values, seeds,
 * the exchange and the host phase (prepare/open) alike, hashes included: their transcripts are
 * compared whole. A graph is keyed by the toggles it was captured under.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { RANK_LINE_MAX_BYTES, RANK_REQUESTS_IN_FLIGHT_MAX } from '../../jobs/rank-protocol-constants.ts';
import { RankUnderTest } from './rank-under-test.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PROGRAMS = join(ROOT, 'test', 'conformance', 'programs');
const GRAPHRT = join(ROOT, 'native', 'build', 'graphrt');
const workdir = mkdtempSync(join(tmpdir(), 'orch-conformance-'));
const CPP_BIN = join(workdir, 'conformance_rank');

type Line = Record<string, unknown>;
type Env = Record<string, string>;

interface Library {
  name: 'python' | 'cpp';
  start(env?: Env, params?: Record<string, unknown>): RankUnderTest;
}

const LIBRARIES: Library[] = [
  {
    name: 'python',
    start: (env = {}, params = {}) =>
      new RankUnderTest('python3', [join(PROGRAMS, 'conformance_rank.py')], {
        PYTHONPATH: join(ROOT, 'ranklib', 'python'),
        ORCH_RANK_PROTOCOL: '1',
        ORCH_PARAMS: JSON.stringify(params),
        ...env,
      }),
  },
  {
    name: 'cpp',
    start: (env = {}, params = {}) =>
      new RankUnderTest(CPP_BIN, [], { ORCH_RANK_PROTOCOL: '1', ORCH_PARAMS: JSON.stringify(params), ...env }),
  },
];

const started: RankUnderTest[] = [];
const track = (r: RankUnderTest): RankUnderTest => {
  started.push(r);
  return r;
};

before(() => {
  const cc = spawnSync(
    'g++',
    [
      '-std=c++17',
      '-O1',
      '-Wall',
      '-Wextra',
      '-Werror',
      `-I${join(ROOT, 'ranklib', 'cpp')}`,
      '-o',
      CPP_BIN,
      join(PROGRAMS, 'conformance_rank.cpp'),
    ],
    { encoding: 'utf8' },
  );
  assert.equal(cc.status, 0, `g++: ${cc.stderr}`);
});

after(() => {
  for (const r of started) r.kill();
  rmSync(workdir, { recursive: true, force: true });
});

/** What is compared between implementations: the protocol's content, not clocks, pids or wording. */
function normal(line: Line | null): unknown {
  if (line === null) return null;
  const out: Line = {};
  for (const [k, value] of Object.entries(line)) {
    if (
      [
        'pid',
        'device',
        'library',
        't_start_ns',
        't_end_ns',
        'launches',
        'clocks',
        'xid_events',
        'ecc_errors',
        'message',
      ].includes(k)
    )
      continue;
    if (k === 'step_ms' || k === 'warmup_ms') out[k] = Array.isArray(value) ? value.length : value;
    else if (k === 'prepare_ms' || k === 'setup_ms') out[k] = typeof value;
    else out[k] = value;
  }
  return out;
}

const base64 = (text: string): string => Buffer.from(text).toString('base64');

const rep = (id: string, toggles: Record<string, boolean | string>, extra: Line = {}): Line => ({
  v: 1,
  id,
  op: 'rep',
  arm: id,
  toggles,
  warmup: 1,
  steps: 3,
  seed: 5,
  ...extra,
});

/** A request of exactly `bytes` bytes (its newline not counted): valid JSON padded with spaces. */
function padded(request: Line, bytes: number): string {
  const text = JSON.stringify(request);
  return text + ' '.repeat(bytes - Buffer.byteLength(text));
}

/** The bad inputs every implementation answers alike: the line and the answer's type, id and code. */
const BAD_INPUTS: Array<{ name: string; line: () => string; answer: Line }> = [
  {
    name: 'bad version',
    line: () => JSON.stringify({ ...rep('bad-v', {}), v: 2 }),
    answer: { type: 'error', id: 'bad-v', code: 'BAD_REQUEST' },
  },
  {
    name: 'unknown toggle',
    line: () => JSON.stringify(rep('bad-t', { NOPE: true })),
    answer: { type: 'error', id: 'bad-t', code: 'UNKNOWN_TOGGLE' },
  },
  { name: 'garbage line', line: () => 'garbage{', answer: { type: 'error', code: 'BAD_REQUEST' } },
  {
    name: '1 MiB + 1 line',
    line: () => padded(rep('big', {}), RANK_LINE_MAX_BYTES + 1),
    answer: { type: 'error', code: 'BAD_REQUEST' },
  },
  {
    name: 'wrong id',
    line: () => JSON.stringify({ ...rep('x', {}), id: 7 }),
    answer: { type: 'error', code: 'BAD_REQUEST' },
  },
];

const pick = (line: Line | null, keys: string[]): Line =>
  Object.fromEntries(keys.filter((k) => line !== null && k in line).map((k) => [k, line?.[k]]));

const transcripts = new Map<string, Map<string, unknown[]>>();
function record(lib: string, name: string, lines: unknown[]): void {
  if (!transcripts.has(lib)) transcripts.set(lib, new Map());
  transcripts.get(lib)?.set(name, lines);
}

for (const lib of LIBRARIES) {
  describe(`conformance: ${lib.name} library`, () => {
    test('serving: hello, reps, toggle values, graphs keyed by toggles, seeds, the gate, bad inputs, stdin closed', async () => {
      const r = track(lib.start());
      const lines: Array<Line | null> = [];
      const hello = await r.next();
      lines.push(hello);
      assert.deepEqual(
        pick(hello, [
          'v',
          'type',
          'protocol',
          'version',
          'name',
          'hash',
          'toggles',
          'outputs',
          'backend',
          'timing',
          'final',
        ]),
        {
          v: 1,
          type: 'hello',
          protocol: 'orch-rank',
          version: 1,
          name: 'conformance',
          hash: 'blake2b-64',
          toggles: ['GRAPH', 'PDL'],
          outputs: ['state'],
          backend: 'cpu',
          timing: 'host-clock',
          final: true,
        },
      ); // prettier-ignore
      assert.equal(typeof hello?.prepare_ms, 'number');
      assert.equal(typeof hello?.setup_ms, 'number');
      const ask = async (request: Line | string): Promise<Line> => {
        const line = await r.send(request);
        assert.ok(
          line !== null,
          `no answer to ${typeof request === 'string' ? request.slice(0, 80) : JSON.stringify(request)}`,
        );
        lines.push(line);
        return line;
      };
      const eager = await ask(rep('eager', {}));
      assert.deepEqual(pick(eager, ['type', 'id', 'mode', 'graph']), {
        type: 'rep',
        id: 'eager',
        mode: 'eager',
        graph: null,
      });
      const graph = await ask(rep('graph', { GRAPH: true }));
      assert.deepEqual(pick(graph, ['mode', 'graph']), { mode: 'graph', graph: 'fresh' });
      assert.deepEqual(graph.hashes, eager.hashes, 'a graph rep hashes as the eager rep of its seed');
      assert.deepEqual(pick(await ask(rep('graph-again', { GRAPH: true })), ['mode', 'graph']), {
        mode: 'graph',
        graph: 'reused',
      });
      assert.deepEqual(
        pick(await ask(rep('graph-off', { GRAPH: 'off' })), ['mode', 'graph']),
        { mode: 'eager', graph: null },
        '"off" reads as off',
      );
      assert.deepEqual(
        pick(await ask(rep('graph-false', { GRAPH: 'false' })), ['mode', 'graph']),
        { mode: 'eager', graph: null },
        '"false" reads as off',
      );
      assert.equal((await ask(rep('graph-on', { GRAPH: 'on' }))).mode, 'graph', '"on" reads as on');
      const pdlEager = await ask(rep('pdl-eager', { PDL: true }));
      const pdlGraph = await ask(rep('pdl-graph', { GRAPH: true, PDL: true }));
      assert.deepEqual(
        pick(pdlGraph, ['mode', 'graph']),
        { mode: 'graph', graph: 'fresh' },
        'a graph captured without PDL is not replayed with PDL on',
      );
      assert.deepEqual(pdlGraph.hashes, pdlEager.hashes, 'the PDL arm replays its own graph');
      assert.notDeepEqual(pdlGraph.hashes, graph.hashes);
      const { seed: _seed, ...noSeed } = rep('no-seed', {});
      const unseeded = await ask(noSeed);
      assert.equal(unseeded.type, 'rep', 'a request without a seed is served (seed 0)');
      assert.notDeepEqual(unseeded.hashes, eager.hashes, 'the seed shapes reset()');
      const gate = await ask({
        v: 1,
        id: 'gate',
        op: 'identity',
        arm: 'graph',
        toggles: { GRAPH: true },
        toggle: 'GRAPH',
        replays: 3,
        seed: 5,
      });
      assert.deepEqual(pick(gate, ['type', 'id', 'mode', 'replays']), {
        type: 'identity',
        id: 'gate',
        mode: 'graph',
        replays: 3,
      });
      assert.deepEqual(gate.graph, gate.eager);
      for (const bad of BAD_INPUTS)
        assert.deepEqual(pick(await ask(bad.line()), ['type', 'id', 'code']), bad.answer, bad.name);
      const exact = await ask(padded(rep('exact', {}), RANK_LINE_MAX_BYTES));
      assert.deepEqual(
        pick(exact, ['type', 'id']),
        { type: 'rep', id: 'exact' },
        'a line of exactly 1 MiB (its newline not counted) is served',
      );
      assert.deepEqual(await r.close(), { code: 0, signal: null }, 'stdin closed: exit 0');
      assert.equal(await r.next(), null, 'nothing after stdin closed');
      record(lib.name, 'serving', lines.map(normal));
    });

    test('exchange on rank 0: its bytes out, the worker answer in, then hello', async () => {
      const r = track(lib.start({ ORCH_RANK: '0' }, { exchange: 'conf-key' }));
      const ex = await r.next();
      assert.deepEqual(ex, {
        v: 1,
        type: 'exchange',
        key: 'conf-key',
        data: Buffer.from('conformance-bytes').toString('base64'),
      });
      const hello = await r.send({
        v: 1,
        op: 'exchange',
        key: 'conf-key',
        data: Buffer.from('conformance-bytes').toString('base64'),
      });
      assert.equal(hello?.type, 'hello');
      const answer = await r.send(rep('after', {}));
      assert.deepEqual(answer?.counters, { exchanged: 17 });
      assert.deepEqual(await r.close(), { code: 0, signal: null });
      record(lib.name, 'exchange rank 0', [ex, normal(hello), normal(answer)]);
    });

    test('exchange on rank 1: null out, rank 0 bytes in', async () => {
      const r = track(lib.start({ ORCH_RANK: '1' }, { exchange: 'conf-key' }));
      const ex = await r.next();
      assert.deepEqual(ex, { v: 1, type: 'exchange', key: 'conf-key', data: null });
      assert.equal(
        (await r.send({ v: 1, op: 'exchange', key: 'conf-key', data: Buffer.from('abc').toString('base64') }))?.type,
        'hello',
      );
      assert.deepEqual((await r.send(rep('after', {})))?.counters, { exchanged: 3 });
      assert.deepEqual(await r.close(), { code: 0, signal: null });
      record(lib.name, 'exchange rank 1', [ex]);
    });

    test('exchange answered with an error: the library raises with its text; setup fails, exit 1', async () => {
      const r = track(lib.start({ ORCH_RANK: '1' }, { exchange: 'conf-key' }));
      assert.equal((await r.next())?.type, 'exchange');
      r.write(JSON.stringify({ v: 1, op: 'exchange', key: 'conf-key', error: 'deadline: rank 0 never published' }));
      assert.equal(await r.next(), null, 'no hello');
      assert.deepEqual(await r.exitWithin(), { code: 1, signal: null });
      assert.match(r.stderr, /deadline: rank 0 never published/);
    });

    test('exchange inside a request with the next request already written: the answer read past it, both served', async () => {
      // the worker's one-deep pipeline: rep "second" is on stdin before "first"'s step exchanges
      const r = track(lib.start({ ORCH_RANK: '0' }, { step_exchange: 'step-key' }));
      assert.equal((await r.next())?.type, 'hello');
      r.write(JSON.stringify(rep('first', {})));
      r.write(JSON.stringify(rep('second', {})));
      const ex = await r.next();
      assert.deepEqual(ex, { v: 1, type: 'exchange', key: 'step-key', data: base64('step-bytes') });
      const first = await r.send({ v: 1, op: 'exchange', key: 'step-key', data: base64('from rank 0') });
      const second = await r.next();
      const counters = { exchanged: 0, step_exchanged: 'from rank 0'.length };
      assert.deepEqual(pick(first, ['type', 'id', 'counters']), { type: 'rep', id: 'first', counters }, r.stderr);
      assert.deepEqual(pick(second, ['type', 'id', 'counters']), { type: 'rep', id: 'second', counters }, r.stderr);
      assert.deepEqual(second?.hashes, first?.hashes, 'the same seed, the same hashes');
      assert.deepEqual(await r.close(), { code: 0, signal: null });
      assert.equal(await r.next(), null, 'no line after the two answers');
      record(lib.name, 'exchange inside a request', [ex, normal(first), normal(second)]);
    });

    test('exchange inside a request: a line more than the worker may have in flight is refused, the held ones served', async () => {
      const r = track(lib.start({ ORCH_RANK: '1' }, { step_exchange: 'step-key' }));
      assert.equal((await r.next())?.type, 'hello');
      // the request being served, then RANK_REQUESTS_IN_FLIGHT_MAX held, then one more: a worker out of bounds
      const ids = Array.from({ length: RANK_REQUESTS_IN_FLIGHT_MAX + 2 }, (_, i) => `r${i}`);
      for (const id of ids) r.write(JSON.stringify(rep(id, {})));
      const ex = await r.next();
      assert.deepEqual(ex, { v: 1, type: 'exchange', key: 'step-key', data: null });
      const refused = await r.next();
      assert.deepEqual(pick(refused, ['type', 'id', 'code', 'fatal']), {
        type: 'error',
        id: 'r0',
        code: 'STEP_FAILED',
        fatal: false,
      });
      assert.match(
        String(refused?.message),
        new RegExp(`one line more than the ${RANK_REQUESTS_IN_FLIGHT_MAX} requests the worker may have in flight`),
      );
      const served = [];
      for (const id of ids.slice(1, -1)) {
        const line = await r.next();
        assert.deepEqual(pick(line, ['type', 'id']), { type: 'rep', id }, r.stderr);
        served.push(normal(line));
      }
      assert.deepEqual(await r.close(), { code: 0, signal: null });
      assert.equal(await r.next(), null, 'the line over the bound is dropped, not answered');
      record(lib.name, 'exchange over the held bound', [ex, normal(refused), ...served]);
    });

    test('host phase: prepared with no device, open sets the devices, hello with prepare_ms and setup_ms', async () => {
      const r = track(
        lib.start({ ORCH_HOST_PHASE: '1', CUDA_VISIBLE_DEVICES: 'GPU-before' }, { expect_devices: 'GPU-conf' }),
      );
      const prepared = await r.next();
      assert.deepEqual(pick(prepared, ['v', 'type']), { v: 1, type: 'prepared' });
      assert.equal(typeof prepared?.prepare_ms, 'number');
      const hello = await r.send({ v: 1, op: 'open', devices: 'GPU-conf' });
      assert.equal(hello?.type, 'hello', `stderr: ${r.stderr}`);
      assert.equal(typeof hello?.prepare_ms, 'number');
      assert.equal(typeof hello?.setup_ms, 'number');
      assert.deepEqual(await r.close(), { code: 0, signal: null });
      record(lib.name, 'host phase', [normal(prepared), normal(hello)]);
    });

    test('host phase: a malformed open is BAD_REQUEST and exit 2; stdin closed before open is exit 0', async () => {
      const bad = track(lib.start({ ORCH_HOST_PHASE: '1' }));
      assert.equal((await bad.next())?.type, 'prepared');
      const err = await bad.send({ v: 1, op: 'opne', devices: '0' });
      assert.deepEqual(pick(err, ['type', 'code', 'fatal']), { type: 'error', code: 'BAD_REQUEST', fatal: true });
      assert.deepEqual(await bad.exitWithin(), { code: 2, signal: null });
      const closed = track(lib.start({ ORCH_HOST_PHASE: '1' }));
      assert.equal((await closed.next())?.type, 'prepared');
      assert.deepEqual(await closed.close(), { code: 0, signal: null });
      record(lib.name, 'host phase refusals', [normal(err)]);
    });
  });
}

test('conformance: the Python library refuses a prepare() that initialised CUDA (PREPARE_TOUCHED_CUDA, exit 2)', async () => {
  // orch_rank.h's check needs a CUDA build (the driver library loaded and initialised): not here
  const python = LIBRARIES.find((l) => l.name === 'python');
  assert.ok(python !== undefined);
  const r = track(python.start({ ORCH_HOST_PHASE: '1', CONFORMANCE_TOUCH_CUDA: '1' }));
  const err = await r.next();
  assert.deepEqual(pick(err, ['type', 'code', 'fatal']), { type: 'error', code: 'PREPARE_TOUCHED_CUDA', fatal: true });
  assert.match(
    String(err?.message),
    /^prepare\(\) initialised CUDA \(.+\); orch will start this rank inside its lease$/,
  );
  assert.deepEqual(await r.exitWithin(), { code: 2, signal: null });
});

test('conformance: the two libraries give the same transcripts, hashes included', () => {
  const py = transcripts.get('python');
  const cpp = transcripts.get('cpp');
  assert.ok(py !== undefined && cpp !== undefined && py.size === 7, 'every library case ran');
  for (const [name, lines] of py) assert.deepEqual(cpp.get(name), lines, name);
});

describe('conformance: graphrt', { skip: existsSync(GRAPHRT) ? false : 'native/build/graphrt is not built' }, () => {
  test('the same bad inputs, the same answers; a line of exactly 1 MiB served; stdin closed, exit 0', async () => {
    const r = track(new RankUnderTest(GRAPHRT, ['serve', '--backend', 'cpu'], {}));
    assert.equal((await r.next())?.type, 'hello');
    for (const bad of BAD_INPUTS) {
      // graphrt's toggles are its own; the unknown toggle is as unknown there
      assert.deepEqual(pick(await r.send(bad.line()), ['type', 'id', 'code']), bad.answer, bad.name);
    }
    const exact = await r.send(
      padded(
        {
          v: 1,
          id: 'exact',
          op: 'rep',
          arm: 'a',
          workload: 'chain',
          params: { kernels: 4 },
          toggles: {},
          warmup: 0,
          steps: 2,
          seed: 5,
        },
        RANK_LINE_MAX_BYTES,
      ),
    );
    assert.deepEqual(pick(exact, ['type', 'id', 'mode']), { type: 'rep', id: 'exact', mode: 'eager' });
    assert.deepEqual(await r.close(), { code: 0, signal: null });
    assert.equal(await r.next(), null);
  });
});
