/**
 * The Python rank library (ranklib/python/orch_rank) against ranklib/PROTOCOL.md, spoken to
 * directly over a real process's stdin and stdout (no worker): examples/torch-decode/decode.py
 * (its pure-Python model where there is no torch or no GPU, captured through the library's host
 * emulation of a CUDA graph) and a tiny inline program. Shown: hello's fields; the program's
 * print()s and fd-1 writes reach stderr, never the protocol stream; an eager and a graph rep of
 * one seed hash alike step by step, and so do two eager reps (A/A); the first graph rep captures
 * (`fresh`), the next replays (`reused`); the identity gate's two sides agree with STALE_INPUT
 * off and part at replay 2 with it on; a malformed request, an unknown toggle and a step that
 * raises are answered with an error and serving goes on; stdin closed, the rank exits 0. Launch
 * counts (PROTOCOL.md "Launch counts and clocks"): without an injection library a rep says why
 * it has none and carries no clocks; with a stand-in library compiled here (planted counters
 * that advance by fixed amounts per read, planted clocks) the per-step counts, the request's
 * captured total, the clocks' reason names and xid_events are the library's. Last, `pip install`
 * of ranklib/python, when pip can build it offline.
 */
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { OrchRankTraceSchema } from '../../jobs/orch-rank-protocol.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DECODE = join(ROOT, 'examples/torch-decode/decode.py');
const RANKLIB = join(ROOT, 'ranklib/python');
const HEX16 = /^[0-9a-f]{16}$/;

type Line = Record<string, unknown> & { v: number; type: string };
type Hashes = Record<string, string>[];

/** A rank process: its protocol lines in order, its stderr kept, its exit awaited. */
class Rank {
  readonly child: ChildProcessWithoutNullStreams;
  readonly stdout: string[] = [];
  stderr = '';
  private readonly waiting: ((line: Line) => void)[] = [];
  private readonly queued: Line[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(args: string[], params: Record<string, unknown> = {}, env: Record<string, string> = {}) {
    this.child = spawn('python3', args, {
      cwd: ROOT,
      stdio: 'pipe',
      // PYTHONDONTWRITEBYTECODE: no __pycache__ left in the checkout
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ORCH_PARAMS: JSON.stringify(params),
        PYTHONDONTWRITEBYTECODE: '1',
        ...env,
      },
    });
    this.child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    createInterface({ input: this.child.stdout }).on('line', (raw) => {
      this.stdout.push(raw);
      let line: Line;
      try {
        line = JSON.parse(raw) as Line;
      } catch {
        line = { v: 0, type: `not a protocol line: ${raw}` };
      }
      const w = this.waiting.shift();
      if (w) w(line);
      else this.queued.push(line);
    });
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  next(): Promise<Line> {
    const q = this.queued.shift();
    if (q) return Promise.resolve(q);
    return new Promise((resolve, reject) => {
      this.waiting.push(resolve);
      void this.exited.then(({ code }) =>
        reject(new Error(`the rank exited (${code}) with no line; stderr:\n${this.stderr}`)),
      );
    });
  }

  send(text: string): Promise<Line> {
    this.child.stdin.write(`${text}\n`);
    return this.next();
  }

  request(req: Record<string, unknown>): Promise<Line> {
    return this.send(JSON.stringify({ v: 1, ...req }));
  }

  /** Closes stdin; the rank must exit 0 on its own, every stdout line a protocol line. */
  async close(): Promise<void> {
    this.child.stdin.end();
    const exit = await this.exited;
    assert.deepEqual(exit, { code: 0, signal: null }, `the rank exits 0 when stdin closes; stderr:\n${this.stderr}`);
    for (const raw of this.stdout) {
      const line = JSON.parse(raw) as Line;
      assert.equal(line.v, 1, raw);
      assert.ok(['hello', 'rep', 'identity', 'trace', 'error'].includes(line.type), raw);
    }
  }
}

const ranks: Rank[] = [];
function decode(params: Record<string, unknown> = {}): Rank {
  const r = new Rank([DECODE], params);
  ranks.push(r);
  return r;
}
after(() => {
  for (const r of ranks) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
});

const rep = (id: string, arm: string, toggles: Record<string, boolean | string>, steps = 6, warmup = 2) => ({
  id,
  op: 'rep',
  arm,
  toggles,
  warmup,
  steps,
  seed: 1,
});
const identity = (id: string, toggles: Record<string, boolean>) => ({
  id,
  op: 'identity',
  arm: 'graph',
  toggles,
  toggle: 'GRAPH',
  replays: 7,
  seed: 1,
});

function assertRep(line: Line, id: string, arm: string, steps: number, warmup: number): Hashes {
  assert.equal(line.type, 'rep', JSON.stringify(line));
  // no injection library here (the rank's env names none): launches say why, and no clocks
  assert.deepEqual(Object.keys(line), [
    'v',
    'type',
    'id',
    'arm',
    'mode',
    'graph',
    'warmup_ms',
    'step_ms',
    'hashes',
    'counters',
    'launches',
    't_start_ns',
    't_end_ns',
    'final',
  ]);
  const launches = line.launches as Record<string, unknown>;
  assert.deepEqual(Object.keys(launches), ['source', 'reason']);
  assert.equal(launches.source, 'none');
  assert.ok(typeof launches.reason === 'string' && launches.reason.length > 0);
  assert.deepEqual([line.id, line.arm, line.final], [id, arm, true]);
  for (const [field, n] of [
    ['step_ms', steps],
    ['warmup_ms', warmup],
  ] as const) {
    const ms = line[field] as number[];
    assert.equal(ms.length, n, field);
    assert.ok(
      ms.every((x) => Number.isFinite(x) && x >= 0),
      `${field}: ${ms.join(' ')}`,
    );
  }
  const hashes = line.hashes as Hashes;
  assert.equal(hashes.length, steps);
  assert.ok(
    hashes.every((h) => Object.keys(h).join() === 'logits' && HEX16.test(h.logits!)),
    JSON.stringify(hashes),
  );
  assert.equal(new Set(hashes.map((h) => h.logits)).size, steps, 'every step computes another token: its own hash');
  assert.ok((line.t_start_ns as number) <= (line.t_end_ns as number));
  return hashes;
}

describe('orch_rank.py through examples/torch-decode/decode.py', () => {
  test('hello: the protocol, the library, the backend and its clock, the toggles and outputs', async () => {
    // configs/torch-decode.yaml's params: they size the torch model; the pure-Python one keeps its own
    const r = decode({ layers: 24, hidden: 1024, max_pos: 128 });
    const hello = await r.next();
    assert.deepEqual(Object.keys(hello), [
      'v',
      'type',
      'protocol',
      'version',
      'name',
      'library',
      'backend',
      'device',
      'pid',
      'timing',
      'hash',
      'toggles',
      'outputs',
      'prepare_ms',
      'setup_ms',
      'final',
    ]);
    const { backend, device, pid, timing, prepare_ms, setup_ms, ...rest } = hello;
    assert.ok(
      typeof prepare_ms === 'number' && typeof setup_ms === 'number' && setup_ms >= 0,
      'prepare() and setup() timed',
    );
    assert.deepEqual(rest, {
      v: 1,
      type: 'hello',
      protocol: 'orch-rank',
      version: 1,
      name: 'torch-decode',
      library: 'orch_rank.py 1.0',
      hash: 'blake2b-64',
      toggles: ['GRAPH', 'STALE_INPUT'],
      outputs: ['logits'],
      final: true,
    }); // prettier-ignore
    assert.ok(
      (backend === 'cpu' && timing === 'host-clock') || (backend === 'cuda' && timing === 'cuda-events'),
      `${String(backend)} timed by ${String(timing)}`,
    );
    assert.ok(typeof device === 'string' && device.length > 0);
    assert.equal(pid, r.child.pid);
    const first = await r.request(rep('r0', 'eager', {}, 2, 0));
    assert.equal(first.type, 'rep', JSON.stringify(first));
    assert.deepEqual(first.launches, {
      source: 'none',
      reason: backend === 'cpu' ? 'cpu backend: no CUDA' : 'no CUDA_INJECTION64_PATH: no injection library was named',
    });
    await r.close();
  });

  test('eager and graph reps of one seed hash alike step by step, A/A too; fresh, then reused', async () => {
    const r = decode();
    await r.next();
    const a = await r.request(rep('e0', 'eager', {}));
    assert.deepEqual([a.mode, a.graph, a.counters], ['eager', null, {}]);
    const eager = assertRep(a, 'e0', 'eager', 6, 2);
    const g = await r.request(rep('g0', 'graph', { GRAPH: true }));
    assert.deepEqual([g.mode, g.graph], ['graph', 'fresh']);
    assert.deepEqual(assertRep(g, 'g0', 'graph', 6, 2), eager, 'the graph replays the eager steps');
    const again = await r.request(rep('e1', 'eager', { GRAPH: false, STALE_INPUT: false }));
    assert.deepEqual(assertRep(again, 'e1', 'eager', 6, 2), eager, 'A/A: the same request, the same hashes');
    const reused = await r.request(rep('g1', 'graph', { GRAPH: true }));
    assert.deepEqual([reused.mode, reused.graph], ['graph', 'reused']);
    assert.deepEqual(assertRep(reused, 'g1', 'graph', 6, 2), eager);
    await r.close();
  });

  test('identity: eager and graph agree for 7 replays; STALE_INPUT parts them from replay 2', async () => {
    const r = decode();
    await r.next();
    const ok = await r.request(identity('i0', { GRAPH: true }));
    assert.deepEqual(Object.keys(ok), [
      'v',
      'type',
      'id',
      'arm',
      'mode',
      'replays',
      'eager',
      'graph',
      'counters',
      't_start_ns',
      't_end_ns',
      'final',
    ]);
    assert.deepEqual(
      [ok.type, ok.id, ok.arm, ok.mode, ok.replays, ok.final],
      ['identity', 'i0', 'graph', 'graph', 7, true],
    );
    const eager = ok.eager as Hashes;
    assert.equal(eager.length, 7);
    assert.deepEqual(ok.graph, eager, 'every replay equals its eager step');
    // the gate's capture is the graph the arm's next rep replays
    const next = await r.request(rep('g0', 'graph', { GRAPH: true }));
    assert.deepEqual([next.mode, next.graph], ['graph', 'reused']);

    const stale = await r.request(identity('i1', { GRAPH: true, STALE_INPUT: true }));
    assert.equal(stale.mode, 'graph');
    assert.deepEqual(stale.eager, eager, 'the eager side stages every token whatever STALE_INPUT says');
    const graph = stale.graph as Hashes;
    assert.equal(graph.length, 7);
    assert.deepEqual(graph[0], eager[0], 'replay 1 reads the token reset() staged: right');
    for (let k = 1; k < 7; k++) assert.notDeepEqual(graph[k], eager[k], `replay ${k + 1} reads a stale token`);
    await r.close();
  });

  test('a malformed request and an unknown toggle: answered with an error, serving goes on', async () => {
    const r = decode();
    await r.next();
    const cases: [Record<string, unknown> | string, string | undefined, string, RegExp][] = [
      [{ ...rep('b0', 'A', {}), extra: 1 }, 'b0', 'BAD_REQUEST', /unknown field\(s\) "extra"/],
      [{ id: 'b1', op: 'rep', arm: 'A', toggles: {}, steps: 4 }, 'b1', 'BAD_REQUEST', /missing field\(s\) "warmup"/],
      [rep('b2', 'A', {}, 0), 'b2', 'BAD_REQUEST', /"steps" must be an integer >= 1, not 0/],
      [{ ...rep('b3', 'A', {}), warmup: true }, 'b3', 'BAD_REQUEST', /"warmup" must be an integer >= 0, not true/],
      [
        { ...rep('b4', 'A', { GRAPH: 1 as unknown as boolean }) },
        'b4',
        'BAD_REQUEST',
        /"toggles" must be an object of booleans or strings/,
      ],
      [
        { ...rep('b5', 'A', {}), op: 'probe' },
        'b5',
        'BAD_REQUEST',
        /"op" must be "rep", "identity" or "trace", not "probe"/,
      ],
      [{ ...rep('b6', 'A', {}), v: 2 }, 'b6', 'BAD_REQUEST', /"v" must be 1, not 2/],
      ['{"v":1,"id":"b7",', undefined, 'BAD_REQUEST', /not a JSON line/],
      [
        rep('u0', 'A', { GRAPH: true, PDL: true }),
        'u0',
        'UNKNOWN_TOGGLE',
        /unknown toggle\(s\) "PDL": torch-decode understands GRAPH, STALE_INPUT/,
      ],
      [{ ...identity('u1', { GRAPH: true }), toggle: 'CAPTURE' }, 'u1', 'UNKNOWN_TOGGLE', /"CAPTURE"/],
    ];
    for (const [req, id, code, message] of cases) {
      const line = typeof req === 'string' ? await r.send(req) : await r.send(JSON.stringify({ v: 1, ...req }));
      assert.equal(line.type, 'error', JSON.stringify(line));
      const { message: text, ...rest } = line;
      assert.deepEqual(rest, {
        v: 1,
        type: 'error',
        ...(id === undefined ? {} : { id }),
        code,
        fatal: false,
        final: true,
      });
      assert.match(String(text), message);
      const served = await r.request(rep(`after-${id ?? 'json'}`, 'A', {}, 2, 0));
      assert.equal(served.type, 'rep', `served after ${code}: ${JSON.stringify(served)}`);
    }
    // a blank line is no request: the next answer is the next request's
    r.child.stdin.write('\n  \n');
    assert.equal((await r.request(rep('last', 'A', {}, 2, 0))).id, 'last');
    await r.close();
  });
});

// A program of its own: prints from setup and step (print, sys.stdout, a write to fd 1), a step
// that raises on a toggle, bytes outputs and counters.
const INLINE = `
import os, sys
sys.path.insert(0, ${JSON.stringify(RANKLIB)})
import orch_rank

class Chatty(orch_rank.Program):
    name = "chatty"
    toggles = ["BOOM"]
    def setup(self, params):
        print("setup says hello on stdout")
        self.n = bytearray(1)
    def reset(self):
        self.n[0] = 0
    def step(self, toggles):
        print("step", self.n[0])
        sys.stdout.write("a write to sys.stdout\\n")
        os.write(1, b"a write to fd 1\\n")
        if toggles["BOOM"]:
            raise ValueError("the planted failure")
        self.n[0] += 1
    def outputs(self):
        return {"n": self.n, "twice": [2 * self.n[0]]}
    def counters(self):
        return {"launches_per_step": 1}

orch_rank.serve(Chatty())
`;

describe('orch_rank.py with a program of its own', () => {
  test("the program's prints reach stderr, never the protocol; a raising step is STEP_FAILED and serving goes on", async () => {
    const r = new Rank(['-c', INLINE]);
    ranks.push(r);
    const hello = await r.next();
    assert.deepEqual(
      [hello.type, hello.name, hello.backend, hello.toggles, hello.outputs],
      ['hello', 'chatty', 'cpu', ['BOOM'], ['n', 'twice']],
    );
    const ok = await r.request({ id: 'r0', op: 'rep', arm: 'A', toggles: {}, warmup: 1, steps: 2 });
    assert.deepEqual([ok.type, ok.mode, ok.graph, ok.counters], ['rep', 'eager', null, { launches_per_step: 1 }]);
    assert.deepEqual([ok.launches, 'clocks' in ok], [{ source: 'none', reason: 'cpu backend: no CUDA' }, false]);
    assert.equal((ok.hashes as Hashes).length, 2);
    const boom = await r.request({ id: 'r1', op: 'rep', arm: 'B', toggles: { BOOM: true }, warmup: 0, steps: 1 });
    assert.deepEqual([boom.type, boom.id, boom.code, boom.fatal], ['error', 'r1', 'STEP_FAILED', false]);
    assert.equal(boom.message, 'step() raised ValueError: the planted failure');
    const again = await r.request({ id: 'r2', op: 'rep', arm: 'A', toggles: { BOOM: false }, warmup: 1, steps: 2 });
    assert.deepEqual(again.hashes, ok.hashes, 'served after the failure, from the reset state');
    await r.close();
    for (const text of [
      'setup says hello on stdout',
      'step 0',
      'a write to sys.stdout',
      'a write to fd 1',
      'ValueError: the planted failure',
    ]) {
      assert.ok(r.stderr.includes(text), `stderr has ${JSON.stringify(text)}:\n${r.stderr}`);
    }
    assert.ok(
      r.stdout.every((l) => !l.includes('hello on stdout') && !l.includes('a write to')),
      r.stdout.join('\n'),
    );
  });
});

// A stand-in for native/inject's liborch_inject.so, its C ABI (native/inject/orch_inject.h) with
// planted answers: each orch_inject_read adds 7 kernels, 5 captured, 1 graph, 2 memcpy, 3 syncs;
// each orch_inject_clocks reports reasons 0x20 (named) and 0x1000 (a bit with no name) and one
// more XID than the last. FAKE_INJECT_OFF=1: a library the driver never initialised.
// FAKE_REASON_MASK=1: orch_inject_reason_name takes the mask (the brief's draft), not the index.
const FAKE_INJECT_C = `
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
struct orch_inject_counts { uint64_t abi, initialized, kernels, captured, graphs, memcpy, memset, syncs; };
struct orch_inject_clock { int ok; int sm_mhz; int mem_mhz; int temp_c; double power_w; unsigned long long reasons; unsigned long long xid_events; };
static struct orch_inject_counts c = {1, 1, 0, 0, 0, 0, 0, 0};
static unsigned long long xid = 40;
static int off(void) { const char* s = getenv("FAKE_INJECT_OFF"); return s != NULL && s[0] == '1'; }
int orch_inject_read(struct orch_inject_counts* out) {
  if (off()) { struct orch_inject_counts z = {1, 0, 0, 0, 0, 0, 0, 0}; *out = z; return 0; }
  c.kernels += 7; c.captured += 5; c.graphs += 1; c.memcpy += 2; c.syncs += 3;
  *out = c;
  return 1;
}
int orch_inject_clocks(struct orch_inject_clock* out) {
  struct orch_inject_clock k = {1, 1980, 3201, 38, 121.5, 0x20ULL | 0x1000ULL, ++xid};
  *out = k;
  return 1;
}
const char* orch_inject_status(void) { return off() ? "the driver never called InitializeInjection" : "counting"; }
/* trace mode (FAKE_TRACE=1): timestamps 1000 ns apart; each pair of marks since the last take
 * holds one kernel [start + 100, start + 900]; one graph instantiation once a mark was taken */
static unsigned long long ts = 0, taken = 0;
static int graph_given = 0;
struct orch_inject_kernel { uint64_t start_ns, end_ns; uint32_t graph_id, stream_id; };
struct orch_inject_graph { uint32_t graph_id, exec_id; uint64_t nodes, instantiate_ns; };
int orch_inject_tracing(void) { const char* s = getenv("FAKE_TRACE"); return s != NULL && s[0] == '1'; }
unsigned long long orch_inject_timestamp(void) { return orch_inject_tracing() ? (ts += 1000) : 0; }
size_t orch_inject_kernels(struct orch_inject_kernel* out, size_t cap, unsigned long long* dropped) {
  size_t n = 0;
  for (unsigned long long t = taken + 1000; t + 1000 <= ts && n < cap; t += 2000) {
    struct orch_inject_kernel k = {t + 100, t + 900, 0, 7};
    out[n++] = k;
  }
  taken = ts;
  if (dropped != NULL) *dropped = 0;
  return n;
}
size_t orch_inject_graphs(struct orch_inject_graph* out, size_t cap) {
  if (ts == 0 || graph_given || cap == 0) return 0;
  struct orch_inject_graph g = {4, 9, 8, 150000};
  out[0] = g;
  graph_given = 1;
  return 1;
}
/* orch_inject.h's: the bit's index (5 for 0x20); FAKE_REASON_MASK=1: the mask itself (0x20) */
const char* orch_inject_reason_name(unsigned bit) {
  const char* s = getenv("FAKE_REASON_MASK");
  unsigned mask = s != NULL && s[0] == '1' ? bit : bit < 32 ? 1u << bit : 0;
  return mask == 0x20 ? "sw_thermal_slowdown" : mask == 0x1 ? "gpu_idle" : 0;
}
`;

// Loads the library itself first, as the driver would at cuInit (PRELOAD=1), and asks for the
// counts on the cpu backend with device_counters = True (FORCE=1).
const COUNTED = `
import ctypes, os, sys
if os.environ.get("PRELOAD") == "1":
    ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"], mode=ctypes.RTLD_GLOBAL)
sys.path.insert(0, ${JSON.stringify(RANKLIB)})
import orch_rank

class Counted(orch_rank.Program):
    name = "counted"
    toggles = []
    device_counters = True if os.environ.get("FORCE") == "1" else None
    def setup(self, params):
        self.n = bytearray(1)
    def reset(self):
        self.n[0] = 0
    def step(self, toggles):
        self.n[0] += 1
    def outputs(self):
        return {"n": self.n}

orch_rank.serve(Counted())
`;

describe('orch_rank.py with an injection library (a stand-in, compiled here)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-inject-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const lib = join(dir, 'libfake_inject.so');
  writeFileSync(join(dir, 'fake_inject.c'), FAKE_INJECT_C);
  const cc = spawnSync('cc', ['-shared', '-fPIC', '-o', lib, join(dir, 'fake_inject.c')], { encoding: 'utf8' });
  const why = cc.status === 0 ? false : `no C compiler here: ${cc.error?.message ?? cc.stderr}`;
  const counted = (env: Record<string, string>) => {
    const r = new Rank(['-c', COUNTED], {}, { CUDA_INJECTION64_PATH: lib, ...env });
    ranks.push(r);
    return r;
  };
  const req = (id: string, steps: number) => ({ id, op: 'rep', arm: 'A', toggles: {}, warmup: 2, steps });
  const clock = { sm_mhz: 1980, mem_mhz: 3201, temp_c: 38, power_w: 121.5, reasons: ['sw_thermal_slowdown'] };

  test("each measured step's own counts, the request's captures, the clocks and the XIDs", { skip: why }, async () => {
    const r = counted({ PRELOAD: '1', FORCE: '1' });
    assert.equal((await r.next()).backend, 'cpu');
    const a = await r.request(req('c0', 3));
    assert.deepEqual(Object.keys(a), [
      'v',
      'type',
      'id',
      'arm',
      'mode',
      'graph',
      'warmup_ms',
      'step_ms',
      'hashes',
      'counters',
      'launches',
      'clocks',
      'xid_events',
      't_start_ns',
      't_end_ns',
      'final',
    ]);
    // a library without pause (as this stand-in) counts the timed steps: one read before and one
    // after each step, a step's count one read's planted advance; the warm-up steps are not read; captured spans the request: reads 1 (its start) to 8 (its end)
    assert.deepEqual(a.launches, {
      source: 'cupti',
      counted: 'timed',
      kernels: [7, 7, 7],
      captured: 7 * 5,
      graphs: [1, 1, 1],
      memcpy: [2, 2, 2],
      memset: [0, 0, 0],
      syncs: [3, 3, 3],
    });
    assert.deepEqual(a.clocks, { start: clock, end: clock }, 'the named reason kept, the bit with no name left out');
    assert.equal(a.xid_events, 1, 'one more XID at the end than at the start');
    const b = await r.request(req('c1', 1));
    assert.deepEqual(b.launches, {
      source: 'cupti',
      counted: 'timed',
      kernels: [7],
      captured: 3 * 5,
      graphs: [1],
      memcpy: [2],
      memset: [0],
      syncs: [3],
    });
    assert.equal(b.xid_events, 1);
    await r.close();
    // a library whose orch_inject_reason_name takes the mask, not the index, names alike
    const m = counted({ PRELOAD: '1', FORCE: '1', FAKE_REASON_MASK: '1' });
    await m.next();
    assert.deepEqual((await m.request(req('m0', 1))).clocks, { start: clock, end: clock });
    await m.close();
  });

  test('a trace request: each step between two marks, the kernels inside it, the graphs; not tracing says why', {
    skip: why,
  }, async () => {
    const r = counted({ PRELOAD: '1', FORCE: '1', FAKE_TRACE: '1' });
    await r.next();
    const a = OrchRankTraceSchema.parse(await r.request({ ...req('t0', 3), op: 'trace' }));
    assert.equal(a.trace.source, 'cupti');
    if (a.trace.source !== 'cupti') return;
    assert.equal(a.trace.steps.length, 3);
    assert.equal(a.trace.kernels.length, 3, 'the stand-in made one kernel per step; the warm-up made none');
    a.trace.steps.forEach((st, i) => {
      const k = a.trace.source === 'cupti' ? a.trace.kernels[i]! : null;
      assert.ok(k !== null && st.start_ns <= k.start_ns && k.end_ns <= st.end_ns, `kernel ${i} lies inside step ${i}`);
    });
    assert.deepEqual(a.trace.graphs, [{ graph_id: 4, exec_id: 9, nodes: 8, instantiate_ns: 150000 }]);
    await r.close();
    const off = counted({ PRELOAD: '1', FORCE: '1' });
    await off.next();
    const b = OrchRankTraceSchema.parse(await off.request({ ...req('t1', 2), op: 'trace' }));
    assert.deepEqual(b.trace, {
      source: 'none',
      reason: 'the injection library is not tracing (ORCH_INJECT_TRACE=1 when the driver loaded it?): counting',
    });
    await off.close();
  });

  test('no counts, and why: not loaded, never initialised, a cpu backend not forced', { skip: why }, async () => {
    const cases: [Record<string, string>, string | RegExp, boolean][] = [
      [{ FORCE: '1' }, /^the injection library .*libfake_inject\.so is not loaded in this process/, false],
      [{ FORCE: '1', PRELOAD: '1', FAKE_INJECT_OFF: '1' }, 'the driver never called InitializeInjection', true],
      [{ PRELOAD: '1' }, 'cpu backend: no CUDA', false],
    ];
    for (const [env, reason, clocks] of cases) {
      const r = counted(env);
      await r.next();
      const a = await r.request(req('n0', 2));
      assert.equal(a.type, 'rep', JSON.stringify(a));
      const launches = a.launches as { source: string; reason: string };
      assert.deepEqual(Object.keys(launches), ['source', 'reason'], JSON.stringify(env));
      assert.equal(launches.source, 'none');
      if (typeof reason === 'string') assert.equal(launches.reason, reason);
      else assert.match(launches.reason, reason);
      // NVML is no counter: a library that counts nothing may still read the clocks
      assert.equal('clocks' in a, clocks, JSON.stringify(env));
      assert.equal('xid_events' in a, clocks);
      await r.close();
    }
  });
});

describe('ranklib/python as a package', () => {
  // A copy is installed, so that what the build leaves beside the sources can be listed.
  const dir = mkdtempSync(join(tmpdir(), 'orch-ranklib-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(RANKLIB, join(dir, 'src'), { recursive: true, filter: (p) => !/__pycache__|\.egg-info|[/\\]build$/.test(p) });
  const before = readdirSync(join(dir, 'src')).sort();
  // The first Python whose pip can build offline (setuptools and wheel installed).
  const pip = { status: null as number | null, stderr: 'no python3' };
  for (const python of ['python3', '/usr/bin/python3']) {
    const r = spawnSync(
      python,
      [
        '-m',
        'pip',
        'install',
        '--no-deps',
        '--no-build-isolation',
        '--no-index',
        '--target',
        join(dir, 'site'),
        join(dir, 'src'),
      ],
      {
        encoding: 'utf8',
        env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1', PYTHONDONTWRITEBYTECODE: '1' },
      },
    );
    Object.assign(pip, { status: r.status, stderr: r.stderr ?? '' });
    if (r.status === 0) break;
  }
  const why =
    pip.status === 0
      ? false
      : `pip cannot build it offline here: ${(pip.stderr.match(/error: .*/g) ?? [pip.stderr.trim().split('\n').at(-1) ?? 'no output']).join('; ')}`;

  test('pip install leaves nothing in the source directory (no build/, no *.egg-info)', { skip: why }, () => {
    assert.deepEqual(readdirSync(join(dir, 'src')).sort(), before);
  });

  test('pip install --no-deps --no-build-isolation installs orch_rank', { skip: why }, () => {
    const check = spawnSync(
      'python3',
      ['-c', 'import orch_rank, os; print(orch_rank.__version__, os.path.dirname(orch_rank.__file__))'],
      {
        cwd: dir,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', PYTHONPATH: join(dir, 'site'), PYTHONDONTWRITEBYTECODE: '1' },
      },
    );
    assert.equal(check.status, 0, check.stderr);
    assert.equal(check.stdout.trim(), `1.0 ${join(dir, 'site', 'orch_rank')}`);
  });
});
