/**
 * native/inject (liborch_inject.so, the CUPTI injection library) and orch_rank.h's reading of it,
 * on a machine without a GPU: what can be proven here is that the library builds with a host
 * compiler, exports its C ABI and nothing else, and that wherever the driver never called it the
 * answer is "not available" with the reason, never zeros presented as counts. Checked: the CMake
 * target (ORCH_INJECT=ON, GRAPHRT_CUDA=OFF); nm -D; a C program that dlopens it without CUDA
 * (read 0, initialized 0, "never initialized", clocks ok 0, the reason names; InitializeInjection
 * without a driver keeps it off and says why); orch_rank.h built with CUDA on and no GPU (no
 * CUDA_INJECTION64_PATH / named but not loaded / loaded but never initialized); the host rank
 * (source none, "no CUDA in this build"); and nvcc compiling a CUDA rank without warnings.
 * Counting itself needs a GPU and the driver: it is not run here.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  type OrchRankRep,
  type OrchRankTrace,
  OrchRankTraceSchema,
  parseOrchRankLine,
} from '../../jobs/orch-rank-protocol.ts';
import { buildIdleRank, buildInjectLibrary, CUDA, CUDART_DIR, NATIVE, NO_CUPTI, sh } from '../utils/inject-build.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const INJECT_INCLUDE = join(NATIVE, 'inject');
const RANKLIB = join(ROOT, 'ranklib', 'cpp');
const HOST_RANK = join(ROOT, 'test', 'fixtures', 'ranks', 'host-rank.cpp');
const NVCC = join(CUDA, 'bin', 'nvcc');
const EXPORTS = [
  'InitializeInjection',
  'InitializeInjectionNvtx2',
  'orch_inject_clocks',
  'orch_inject_ecc',
  'orch_inject_graphs',
  'orch_inject_kernels',
  'orch_inject_pause',
  'orch_inject_read',
  'orch_inject_reason_name',
  'orch_inject_resume',
  'orch_inject_status',
  'orch_inject_timestamp',
  'orch_inject_tracing',
];

/** The answers of a rank to one small rep request and one trace request (stdin then closed), as the worker's schemas read them. */
function answersOf(bin: string, env: NodeJS.ProcessEnv): { rep: OrchRankRep; trace: OrchRankTrace } {
  const request = (id: string, op: string) =>
    JSON.stringify({ v: 1, id, op, arm: 'A', toggles: {}, warmup: 1, steps: 3, seed: 1 });
  const out = sh(bin, [], {
    input: `${request('r0', 'rep')}\n${request('t0', 'trace')}\n`,
    env: { PATH: process.env.PATH ?? '', ORCH_RANK_PROTOCOL: '1', ...env },
  });
  const lines = out.trim().split('\n');
  const hello = parseOrchRankLine(lines[0] ?? '');
  assert.equal(hello.type, 'hello', out);
  return {
    rep: parseOrchRankLine(lines[1] ?? '') as OrchRankRep,
    trace: OrchRankTraceSchema.parse(JSON.parse(lines[2] ?? 'null')),
  };
}

const repOf = (bin: string, env: NodeJS.ProcessEnv): OrchRankRep => answersOf(bin, env).rep;

// Opens the library as a rank library would, with no CUDA anywhere in the process.
const PROBE_C = `#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "orch_inject.h"
/* the declarations of orch_inject.h give each pointer its type */
#define SYM(name) __typeof__(&name) p_##name = (__typeof__(&name))dlsym(lib, #name)
int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) { fprintf(stderr, "%s\\n", dlerror()); return 2; }
  SYM(orch_inject_read);
  SYM(orch_inject_status);
  SYM(orch_inject_clocks);
  SYM(orch_inject_reason_name);
  SYM(InitializeInjection);
  SYM(orch_inject_tracing);
  SYM(orch_inject_timestamp);
  SYM(orch_inject_kernels);
  SYM(orch_inject_graphs);
  SYM(orch_inject_pause);
  SYM(orch_inject_resume);
  struct orch_inject_counts c;
  memset(&c, 0xff, sizeof c); /* proves the call filled it */
  int r = p_orch_inject_read(&c);
  printf("read=%d abi=%llu initialized=%llu kernels=%llu\\nstatus=%s\\n", r, (unsigned long long)c.abi,
         (unsigned long long)c.initialized, (unsigned long long)c.kernels, p_orch_inject_status());
  struct orch_inject_clock k = {7, 0, 0, 0, 0, 0, 0}; /* ok 7: proves the call wrote it */
  const int ok = p_orch_inject_clocks(&k);
  printf("clocks=%d ok=%d\\n", ok, k.ok);
  printf("reason0=%s reason2=%s reason9=%s\\n", p_orch_inject_reason_name(0), p_orch_inject_reason_name(2),
         p_orch_inject_reason_name(9) == NULL ? "null" : "named");
  printf("init=%d\\n", p_InitializeInjection());
  r = p_orch_inject_read(&c);
  printf("read=%d initialized=%llu\\nstatus=%s\\n", r, (unsigned long long)c.initialized, p_orch_inject_status());
  struct orch_inject_kernel kernels[4];
  struct orch_inject_graph graphs[4];
  unsigned long long dropped = 7; /* untouched when not tracing */
  const size_t nk = p_orch_inject_kernels(kernels, 4, &dropped);
  printf("tracing=%d timestamp=%llu kernels=%zu dropped=%llu graphs=%zu\\n", p_orch_inject_tracing(), p_orch_inject_timestamp(), nk, dropped,
         p_orch_inject_graphs(graphs, 4));
  const int paused = p_orch_inject_pause();
  printf("pause=%d resume=%d status=%s\\n", paused, p_orch_inject_resume(), p_orch_inject_status());
  return 0;
}
`;

// A CUDA rank: one kernel a step, eager or as a graph.
const RANK_CU = `#include "orch_rank.h"
__global__ void add_one(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
class AddOne : public orch_rank::Program {
 public:
  std::string name() const override { return "add-one"; }
  std::string graph_toggle() const override { return "GRAPH"; }
  void setup(const orch_rank::Params&) override { ORCH_CUDA(cudaMalloc(&x_, kN * sizeof(float))); }
  void reset() override { ORCH_CUDA(cudaMemsetAsync(x_, 0, kN * sizeof(float), orch_rank::stream())); }
  void step(const orch_rank::Toggles& t) override {
    const auto body = [&] { add_one<<<(kN + 255) / 256, 256, 0, orch_rank::stream()>>>(x_, kN); };
    if (t.on("GRAPH")) orch_rank::graph("step", body);
    else body();
  }
  std::vector<orch_rank::Output> outputs() override { return {{"x", x_, kN * sizeof(float), true}}; }
 private:
  static constexpr int kN = 1024;
  float* x_ = nullptr;
};
int main() {
  AddOne p;
  return orch_rank::serve(p);
}
`;

describe('liborch_inject.so without a GPU', { skip: NO_CUPTI }, () => {
  let dir = '';
  let lib = '';

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'orch-inject-'));
    lib = buildInjectLibrary(dir);
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  test('it lands beside graphrt in the build directory and exports its C ABI, nothing else', () => {
    assert.ok(existsSync(lib), lib);
    const defined = sh('nm', ['-D', '--defined-only', lib])
      .trim()
      .split('\n')
      .map((l) => l.split(/\s+/).at(-1))
      .sort();
    assert.deepEqual(defined, EXPORTS);
  });

  test('dlopened without CUDA: not counting and saying why, never zeros as counts; no clocks; not tracing', () => {
    const probe = join(dir, 'probe');
    writeFileSync(`${probe}.c`, PROBE_C);
    sh('cc', ['-std=c11', '-Wall', '-Wextra', '-Werror', '-I', INJECT_INCLUDE, `${probe}.c`, '-o', probe, '-ldl']);
    const out = sh(probe, [lib]).split('\n');
    assert.equal(out[0], 'read=0 abi=1 initialized=0 kernels=0');
    assert.match(
      out[1] ?? '',
      /^status=never initialized: the CUDA driver did not call InitializeInjection \(no cuInit in this process, or CUDA_INJECTION64_PATH not set\)$/,
    );
    assert.equal(out[2], 'clocks=0 ok=0', 'no NVML, no driver: ok 0');
    assert.equal(out[3], 'reason0=gpu_idle reason2=sw_power_cap reason9=null', "graphrt's names, by bit index");
    assert.equal(out[4], 'init=1');
    assert.equal(
      out[5],
      'read=0 initialized=0',
      'InitializeInjection with no driver in the process: still not counting',
    );
    assert.equal(out[6], 'status=cuStreamIsCapturing not found: libcuda.so.1 is not in the process');
    assert.equal(
      out[7],
      'tracing=0 timestamp=0 kernels=0 dropped=7 graphs=0',
      'trace mode off: no clock, no records, nothing written',
    );
    assert.equal(
      out[8],
      'pause=0 resume=0 status=cuStreamIsCapturing not found: libcuda.so.1 is not in the process',
      'a library that does not count neither pauses nor resumes, and its status still says why',
    );
  });

  test('with nothing to count (ORCH_INJECT_ONLY=none) and no trace, InitializeInjection subscribes to nothing and says so; ORCH_INJECT_IDLE_SUBSCRIBE=1 goes on as before', () => {
    const probe = join(dir, 'probe');
    if (!existsSync(probe)) {
      writeFileSync(`${probe}.c`, PROBE_C);
      sh('cc', ['-std=c11', '-Wall', '-Wextra', '-Werror', '-I', INJECT_INCLUDE, `${probe}.c`, '-o', probe, '-ldl']);
    }
    const idle = sh(probe, [lib], { env: { ...process.env, ORCH_INJECT_ONLY: 'none' } }).split('\n');
    assert.equal(idle[5], 'read=0 initialized=0');
    // it stops before it looks for the driver or CUPTI: no subscriber (a subscriber alone cost a PyTorch graph step 11-13 % on the H200)
    assert.equal(idle[6], 'status=idle: ORCH_INJECT_ONLY=none counts nothing, so nothing is subscribed');
    const before = sh(probe, [lib], {
      env: { ...process.env, ORCH_INJECT_ONLY: 'none', ORCH_INJECT_IDLE_SUBSCRIBE: '1' },
    }).split('\n');
    assert.equal(
      before[6],
      'status=cuStreamIsCapturing not found: libcuda.so.1 is not in the process',
      'the way to the subscription, as before',
    );
    const traced = sh(probe, [lib], {
      env: { ...process.env, ORCH_INJECT_ONLY: 'none', ORCH_INJECT_TRACE: '1' },
    }).split('\n');
    assert.equal(
      traced[6],
      'status=cuStreamIsCapturing not found: libcuda.so.1 is not in the process',
      'trace mode needs CUPTI even with nothing counted',
    );
  });

  test('orch_rank.h with CUDA on and no GPU: launches says why, for each way of not counting', {
    skip: CUDART_DIR === null ? `no libcudart under ${CUDA}` : false,
  }, () => {
    const bin = buildIdleRank(dir);
    const unset = repOf(bin, {});
    assert.deepEqual(unset.launches, { source: 'none', reason: 'CUDA_INJECTION64_PATH is not set' });
    assert.equal(unset.clocks, undefined, 'no NVML here: clocks absent');
    assert.equal(unset.xid_events, undefined);
    assert.deepEqual(repOf(bin, { CUDA_INJECTION64_PATH: lib }).launches, {
      source: 'none',
      reason: `CUDA_INJECTION64_PATH names ${lib}, which is not loaded in this process`,
    });
    // Loaded (as the driver would load it) but never called: the library's own sentence.
    const loaded = answersOf(bin, { CUDA_INJECTION64_PATH: lib, LD_PRELOAD: lib, ORCH_INJECT_TRACE: '1' });
    const never =
      'never initialized: the CUDA driver did not call InitializeInjection (no cuInit in this process, or CUDA_INJECTION64_PATH not set)';
    assert.deepEqual(loaded.rep.launches, { source: 'none', reason: never });
    // a trace request: not tracing, and why (trace mode starts only where the driver calls the library)
    assert.deepEqual(loaded.trace.trace, {
      source: 'none',
      reason: `the injection library is not tracing (ORCH_INJECT_TRACE=1 when the driver loaded it?): ${never}`,
    });
  });

  test('the host rank (no CUDA in the build): source none, and why', () => {
    const bin = join(dir, 'host-rank');
    sh('g++', ['-O2', '-std=c++17', '-Wall', '-Wextra', '-Wshadow', '-Werror', '-I', RANKLIB, HOST_RANK, '-o', bin]);
    const { rep: a, trace } = answersOf(bin, { CUDA_INJECTION64_PATH: lib });
    assert.deepEqual(a.launches, { source: 'none', reason: 'no CUDA in this build' });
    assert.deepEqual(trace.trace, { source: 'none', reason: 'no CUDA in this build' });
    assert.equal(a.clocks, undefined);
    assert.equal(a.xid_events, undefined);
  });

  test('nvcc compiles a CUDA rank against orch_rank.h without warnings (it runs on a GPU, not here)', {
    skip: existsSync(NVCC) ? false : `no nvcc at ${NVCC}`,
    timeout: 600_000,
  }, () => {
    const src = join(dir, 'add_one.cu');
    writeFileSync(src, RANK_CU);
    sh(NVCC, [
      '-O2',
      '-std=c++17',
      '-arch=sm_90',
      '-Werror',
      'all-warnings',
      '-I',
      RANKLIB,
      src,
      '-o',
      join(dir, 'add-one'),
    ]);
  });
});
