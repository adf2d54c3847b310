/**
 * examples/cuda-tp's CPU build (tp_cpu.cpp: the tensor-parallel step in plain C++, its all-reduce
 * through sockets set up by orch_rank::exchange, as the CUDA build's NCCL communicator is set up by
 * nccl_unique_id()) built by the spec's build and run as a 2-rank resident gang on two cpu cards
 * through `orch submit` (the embedded default). The gang's all-reduce works only if rank 1 got rank
 * 0's bytes through the worker: the identity gate passes on both ranks and both arms are measured.
 * A stale input planted on rank 1 (its head's position, after the last all-reduce) fails the gate
 * on rank 1 only, at replay 2.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { submitSpec } from '../utils/submit-spec.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const embedded = { REDIS_URL: '', ORCH_PREFIX: '', ORCH_CPU_CARDS: '2' };

function spec(name: string, graphToggles: string): string {
  return `name: ${name}
design: ab
workload:
  runtime: command
  build:
    dir: ${JSON.stringify(REPO)}
    cmd: mkdir -p build && g++ -O2 -std=c++17 -I ranklib/cpp examples/cuda-tp/tp_cpu.cpp -o build/cuda-tp-cpu
    artifacts: [build/cuda-tp-cpu]
    key: { git: true, dirty_diff: true, flags: [-O2], toolchain: [g++ --version] }
  run: { cmd: $ORCH_ARTIFACTS/build/cuda-tp-cpu, mode: resident, hello_timeout_s: 60, timeout_s: 120 }
  params: { layers: 3, hidden: 64, ffn: 256 }
  toggles: { GRAPH: request, STALE_INPUT: request }
  warmup: 2
  steps: 8
toggles: [GRAPH, STALE_INPUT]
arms:
  - { name: eager, toggles: { GRAPH: false } }
  - { name: graph, toggles: ${graphToggles} }
reps: 3
blocks: { count: 1, ranks: 2 }
gates:
  identity: { toggle: GRAPH, replays: 7 }
  aa: false
`;
}

describe('examples/cuda-tp, the CPU build, as a 2-rank gang', () => {
  test("the ranks' all-reduce meets through orch's exchange; the identity gate passes on both ranks", () => {
    const r = submitSpec('cuda-tp-cpu', spec('cuda-tp-cpu', '{ GRAPH: true }'), embedded);
    assert.ok([0, 3, 4].includes(r.code ?? -1), r.output);
    assert.match(
      r.report,
      /\| identity \| pass \| graph replay byte-identical to eager in 2 check\(s\) \(1 gate\(s\) × 2 ranks/,
    );
    const reps = r.events.filter((e) => e.event.type === 'rep' && e.committed);
    for (const arm of ['eager', 'graph'])
      for (const rank of [0, 1])
        assert.equal(
          reps.filter((e) => e.rank === rank && e.event.arm === arm).length,
          3,
          `rank ${rank} arm ${arm}: ${JSON.stringify(reps.map((e) => [e.rank, e.event.arm]))}`,
        );
  });

  test('a stale input on rank 1 only: the gate fails naming rank 1, replay 2, output logits', () => {
    const r = submitSpec(
      'cuda-tp-cpu-stale',
      spec('cuda-tp-cpu-stale', '{ GRAPH: true, STALE_INPUT: true }'),
      embedded,
    );
    assert.equal(r.code, 5, r.output);
    assert.match(
      r.report,
      /identity gate failed: graph replay differs from eager \(block 0 arm graph rank 1 \(card cpu:1@[^)]*\) first differing replay 2, output logits \(1 of 2 ranks failed\)\)/,
    );
  });
});
