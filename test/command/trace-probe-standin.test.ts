/**
 * The trace probe end to end on the CPU backend with kernels to summarise: a resident Python rank
 * (orch_rank, device_counters = True) whose process holds a stand-in for orch's injection library
 * in trace mode, compiled here, giving CUPTI-sized timestamps (ns since the epoch, past 2^53) as a
 * library built before native/inject counted from the trace's start did. Through `orch submit`:
 * the worker's parser takes the answers (epoch times rebased exactly), graphrt's chain measures a
 * cpu floor, and the report summarises every arm (busy share, kernels, short kernels, gaps) with
 * the estimates left out for want of a GPU floor, saying why; nothing says "not traced".
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CommandTraceSchema } from '../../jobs/command-line.ts';
import { submitSpec } from '../utils/submit-spec.ts';

const RANKLIB = fileURLToPath(new URL('../../ranklib/python', import.meta.url));

// orch_inject.h's C ABI, as much of it as orch_rank.py opens: counting (zeros), no clocks, and
// trace mode: each mark 10 µs after the last, from an epoch-sized origin; between each pair of
// marks two kernels of 2 µs and 3 µs, 1 µs apart.
const STANDIN_C = `
#include <stddef.h>
#include <stdint.h>
struct orch_inject_counts { uint64_t abi, initialized, kernels, captured, graphs, memcpy, memset, syncs; };
struct orch_inject_clock { int ok; int sm_mhz; int mem_mhz; int temp_c; double power_w; unsigned long long reasons; unsigned long long xid_events; };
struct orch_inject_kernel { uint64_t start_ns, end_ns; uint32_t graph_id, stream_id; };
struct orch_inject_graph { uint32_t graph_id, exec_id; uint64_t nodes, instantiate_ns; };
static const unsigned long long origin = 1796400000123456789ULL;
static unsigned long long ts = 0, taken = 0;
int orch_inject_read(struct orch_inject_counts* out) { struct orch_inject_counts c = {1, 1, 0, 0, 0, 0, 0, 0}; *out = c; return 1; }
int orch_inject_clocks(struct orch_inject_clock* out) { struct orch_inject_clock k = {0, 0, 0, 0, 0, 0, 0}; *out = k; return 0; }
const char* orch_inject_status(void) { return "counting"; }
const char* orch_inject_reason_name(unsigned bit) { (void)bit; return 0; }
int orch_inject_tracing(void) { return 1; }
unsigned long long orch_inject_timestamp(void) { ts += 10000; return origin + ts; }
size_t orch_inject_kernels(struct orch_inject_kernel* out, size_t cap, unsigned long long* dropped) {
  size_t n = 0;
  for (unsigned long long t = taken + 10000; t + 10000 <= ts && n + 1 < cap; t += 20000) {
    struct orch_inject_kernel a = {origin + t + 1000, origin + t + 3000, 0, 7};
    struct orch_inject_kernel b = {origin + t + 4000, origin + t + 7000, 0, 7};
    out[n++] = a;
    out[n++] = b;
  }
  taken = ts;
  if (dropped != NULL) *dropped = 0;
  return n;
}
size_t orch_inject_graphs(struct orch_inject_graph* out, size_t cap) { (void)out; (void)cap; return 0; }
`;

const program = (lib: string) => `
import ctypes, os, sys
os.environ["CUDA_INJECTION64_PATH"] = ${JSON.stringify(lib)}
ctypes.CDLL(${JSON.stringify(lib)}, mode=ctypes.RTLD_GLOBAL)  # as the driver would load it at cuInit
sys.path.insert(0, ${JSON.stringify(RANKLIB)})
import orch_rank

class Traced(orch_rank.Program):
    name = "traced"
    toggles = ["GRAPH"]
    device_counters = True
    def setup(self, params):
        self.n = bytearray(1)
    def reset(self):
        self.n[0] = 0
    def step(self, toggles):
        self.n[0] += 1
    def outputs(self):
        return {"n": self.n}

orch_rank.serve(Traced())
`;

describe('the trace probe with kernels on the CPU backend', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-trace-standin-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const lib = join(dir, 'libstandin_inject.so');
  writeFileSync(join(dir, 'standin.c'), STANDIN_C);
  const cc = spawnSync('cc', ['-shared', '-fPIC', '-o', lib, join(dir, 'standin.c')], { encoding: 'utf8' });
  const why = cc.status === 0 ? false : `no C compiler here: ${cc.error?.message ?? cc.stderr}`;
  writeFileSync(join(dir, 'traced.py'), program(lib));

  test('epoch timestamps and a cpu floor: every arm summarised, the estimates left out and why', { skip: why }, () => {
    const r = submitSpec(
      'trace-standin',
      `name: trace-standin
design: probe
workload:
  runtime: command
  run: { cmd: python3 ${join(dir, 'traced.py')}, mode: resident, hello_timeout_s: 60 }
  toggles: { GRAPH: request }
  warmup: 1
  steps: 3
toggles: [GRAPH]
arms:
  - { name: eager, toggles: { GRAPH: false } }
reps: 2
gates: { identity: false }
`,
      { PYTHONDONTWRITEBYTECODE: '1' },
    );
    assert.equal(r.code, 0, r.output);
    const traces = r.events.filter((e) => e.event.type === 'trace').map((e) => CommandTraceSchema.parse(e.event));
    assert.equal(traces.length, 2, r.output);
    for (const { trace } of traces) {
      assert.equal(trace.source, 'cupti');
      assert.ok(
        trace.source === 'cupti' && trace.steps.every((s) => Number.isSafeInteger(s.start_ns)),
        'rebased to safe integers',
      );
    }
    const arm = r.summary.analysis.trace?.arms[0];
    const summary = arm?.summary;
    assert.ok(summary, JSON.stringify(r.summary.analysis.trace));
    assert.equal(summary.kernels, 2);
    assert.equal(summary.short_kernels, 2);
    assert.equal(summary.busy_share, 0.5, '5 µs of kernels in a 10 µs step');
    assert.equal(summary.gaps_ns, 1000);
    assert.deepEqual([summary.graph_step_estimate_ns, summary.recoverable_ns, summary.floor_ns], [null, null, null]);
    assert.match(
      arm?.estimate_reason ?? '',
      /^no graph-node floor to estimate against: the chain ran on graphrt's cpu backend/,
    );
    assert.match(
      r.report,
      /\| eager \| eager \| 6 \| 10\.00 \| 50\.0 % \| 2 \| 2 \| 1\.00 \| — \| — \| — \| no estimate: no graph-node floor to estimate against: the chain ran on graphrt's cpu backend/,
    );
    assert.doesNotMatch(r.report, /not traced/);
  });
});
