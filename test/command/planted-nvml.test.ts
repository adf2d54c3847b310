/**
 * Clock hygiene from a planted NVML answer, through the path a GPU host takes: orch submit runs a
 * resident Python rank (ranklib/python orch_rank), whose device counters read the clocks from
 * liborch_inject.so (built here with its CMake target), whose NVML code reads a stand-in
 * libnvidia-ml.so.1 answering from a file (test/fixtures/planted-nvml/: a throttle reason at the
 * end of one rep, an XID and a volatile ECC error during another). Nothing in orch or the libraries is told it is a
 * test: the clocks of a card may not be changed, so the card's answer is what is planted. Each
 * policy: warn uses and counts, flag uses and marks, discard re-runs the pair at the block's end
 * and, with the budget spent, leaves the rep out.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type OrchRankRep, parseOrchRankLine } from '../../jobs/orch-rank-protocol.ts';
import { buildIdleRank, buildInjectLibrary, CUDA, CUDART_DIR, NO_CUPTI, sh } from '../utils/inject-build.ts';
import { type Submitted, submitSpec } from '../utils/submit-spec.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/planted-nvml/', import.meta.url));
const RANKLIB = fileURLToPath(new URL('../../ranklib/python/', import.meta.url));
const PYTHON = process.env.PYTHON ?? 'python3';

// device_counters = True: the cpu backend reads the injection library too (device_counters.py)
const PROGRAM = `import sys
sys.path.insert(0, ${JSON.stringify(RANKLIB)})
import orch_rank

class Counter(orch_rank.Program):
    name = "planted-nvml"
    toggles = ["GRAPH"]
    device_counters = True
    def setup(self, params):
        self.n = bytearray(1)
    def reset(self):
        self.n[0] = 0
    def step(self, toggles):
        self.n[0] = (self.n[0] + 1) % 256
    def outputs(self):
        return {"n": self.n}

orch_rank.serve(Counter())
`;

/** Two readings per rep (its start and its end), in the order the rank serves reps; `at` plants one. */
function readings(reps: number, at: Record<number, { reasons?: number; xid?: number; ecc?: number }>): string {
  return Array.from({ length: 2 * reps }, (_, i) => {
    const planted = i % 2 === 1 ? at[(i - 1) / 2] : undefined;
    return `${(planted?.reasons ?? 0).toString(16)} ${planted?.xid ?? 0} ${planted?.ecc ?? 0}`;
  }).join('\n');
}

const SW_THERMAL = 1 << 5; // nvmlClocksEventReasonSwThermalSlowdown, bit 5

describe('clock hygiene from a planted NVML answer, through liborch_inject.so and orch_rank', {
  skip: NO_CUPTI,
}, () => {
  let dir = '';
  let env: Record<string, string> = {};
  let program = '';

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'orch-planted-nvml-'));
    const lib = buildInjectLibrary(dir);
    const cc = (src: string, soname: string) =>
      sh('cc', [
        '-shared',
        '-fPIC',
        '-Wall',
        '-Wextra',
        '-Werror',
        `-Wl,-soname,${soname}`,
        '-o',
        join(dir, soname),
        join(FIXTURES, src),
      ]);
    cc('planted_nvml.c', 'libnvidia-ml.so.1');
    cc('planted_cuda.c', 'libcuda.so.1');
    program = join(dir, 'counter.py');
    writeFileSync(program, PROGRAM);
    // the driver would have loaded both at cuInit; here they are preloaded, and NVML found by name
    env = { LD_PRELOAD: `${join(dir, 'libcuda.so.1')}:${lib}`, LD_LIBRARY_PATH: dir, CUDA_INJECTION64_PATH: lib };
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  function submit(planted: string, extra: string): Submitted {
    const file = join(dir, `planted-${Math.random().toString(36).slice(2)}.txt`);
    writeFileSync(file, planted);
    return submitSpec(
      'planted-nvml',
      `name: planted-nvml
design: ab
workload:
  runtime: command
  run:
    cmd: ${JSON.stringify(`${PYTHON} ${program}`)}
    mode: resident
    env: ${JSON.stringify({ ...env, PLANTED_NVML: file })}
  toggles: { GRAPH: request }
  warmup: 1
  steps: 3
toggles: [GRAPH]
arms:
  - { name: eager, toggles: { GRAPH: false } }
  - { name: graph, toggles: { GRAPH: true } }
reps: 3
gates: { identity: false }
${extra}`,
    );
  }

  // reps served 1 (a throttle reason at its end) and 4 (an XID and an ECC error during it), of 6
  const twoBad = readings(6, { 1: { reasons: SW_THERMAL }, 4: { xid: 1, ecc: 1 } });

  test('flag (the default): both reps used and marked, the clocks read through the library', () => {
    const r = submit(twoBad, '');
    assert.match(r.report, /rep 0\/\w+\/\d flagged: the card was throttled \(sw_thermal_slowdown\)/);
    assert.match(r.report, /rep 0\/\w+\/\d flagged: the card was throttled \(xid ×1, ecc ×1\)/);
    assert.match(r.report, /hygiene: flag: 2 throttled rep\(s\) flagged, 0 discarded/);
    assert.match(r.report, /\| input \| pass \| all 6 planned reps used \|/);
    // marked in the rep values the tables are made of (reps.csv, report.json), too
    const marked = (r.summary.analysis.values as { throttled?: string[] }[]).map((v) => (v.throttled ?? []).join());
    assert.deepEqual(marked.filter((m) => m !== '').sort(), ['sw_thermal_slowdown', 'xid ×1,ecc ×1']);
    // the planted card's clocks, as NVML answered them, reached the report's provenance
    assert.match(r.report, /clocks at start SM 1980 \/ mem 3201 MHz/);
  });

  test('warn: both used, counted in one line', () => {
    const r = submit(twoBad, 'hygiene: warn');
    assert.match(r.report, /2 rep\(s\) ran on a throttled card and were used \(hygiene: warn\): /);
    assert.match(r.report, /hygiene: warn: 2 throttled rep\(s\) used, 0 discarded/);
  });

  test('discard: each throttled pair runs again at the block end, every planned rep used', () => {
    const r = submit(twoBad, 'hygiene: discard');
    assert.match(r.report, /\| input \| pass \| all 6 planned reps used \|/);
    assert.match(
      r.report,
      /hygiene: discard: 0 throttled rep\(s\) flagged, 0 discarded, 4 re-run at their block's end \(2 throttled measurement\(s\) thrown away\)/,
    );
    assert.equal(
      (r.summary.analysis.values as { reruns?: number }[]).filter((v) => v.reruns === 1).length,
      4,
      'each re-run rep marked',
    );
  });

  test('discard with a budget of one pair, whose re-run is throttled again: that rep is left out', () => {
    // served 6 and 7 are the re-run of rep 1's pair; 7 is throttled again, and no budget is left
    const r = submit(
      readings(8, { 1: { reasons: SW_THERMAL }, 7: { reasons: SW_THERMAL } }),
      'hygiene: discard\nhygiene_reruns: 1',
    );
    assert.match(r.report, /rep 0\/\w+\/\d not used: the card was throttled \(sw_thermal_slowdown\); hygiene: discard/);
    assert.match(r.report, /\| input \| pass \| 5 of 6 planned reps used \(see issues\) \|/);
    assert.match(
      r.report,
      /hygiene: discard: 0 throttled rep\(s\) flagged, 1 discarded, 2 re-run at their block's end \(1 throttled measurement\(s\) thrown away\)/,
    );
  });

  test('orch_rank.h reads the same planted answer: the end reasons, the XID and the ECC error of its rep', {
    skip: CUDART_DIR === null ? `no libcudart under ${CUDA}` : false,
  }, () => {
    const bin = buildIdleRank(dir);
    const file = join(dir, 'planted-cpp.txt');
    writeFileSync(file, readings(1, { 0: { reasons: SW_THERMAL, xid: 2, ecc: 1 } }));
    const request = { v: 1, id: 'r0', op: 'rep', arm: 'A', toggles: {}, warmup: 1, steps: 2, seed: 1 };
    const out = sh(bin, [], {
      input: `${JSON.stringify(request)}\n`,
      env: { PATH: process.env.PATH ?? '', ORCH_RANK_PROTOCOL: '1', ...env, PLANTED_NVML: file },
    });
    const rep = parseOrchRankLine(out.trim().split('\n')[1] ?? '') as OrchRankRep;
    assert.deepEqual(rep.clocks?.end.reasons, ['sw_thermal_slowdown']);
    assert.deepEqual([rep.xid_events, rep.ecc_errors], [2, 1]);
  });
});
