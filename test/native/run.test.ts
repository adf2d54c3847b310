/**
 * graphrt run, driven as a user drives it: the identity gate and its planted bugs (frozen pointer,
 * unpinned parameter, lazy allocation), the A/A, and every bad input with its code and exit code.
 * Oracles are computed: the eager run of the same steps, never a hand-written hash.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { only, runGraphrt, skipWithoutBinary } from './graphrt.ts';

const skip = skipWithoutBinary;
const cpu = ['--backend', 'cpu'];

test('run prints hello first, then versioned lines with a type', { skip }, () => {
  const r = runGraphrt(['run', ...cpu, '--workload', 'chain', '--steps', '3']);
  assert.equal(r.code, 0);
  assert.equal(r.lines[0]?.type, 'hello');
  const hello = only(r.lines, 'hello');
  assert.equal(hello.backend, 'cpu');
  assert.equal(hello.features.pdl, false);
  const rep = only(r.lines, 'rep');
  assert.equal(rep.backend, 'cpu');
  assert.equal(rep.mode, 'eager');
  assert.equal(rep.launches_per_step, 64);
  assert.equal(rep.step_ms.length, 3);
  assert.equal(rep.hashes.length, 3);
});

test('decode with graph: identity passes over capture + 7 replays', { skip }, () => {
  const r = runGraphrt(['run', ...cpu, '--workload', 'decode', '--graph', '--identity', '7', '--steps', '8']);
  assert.equal(r.code, 0);
  const gate = only(r.lines, 'gate');
  assert.equal(gate.name, 'identity');
  assert.equal(gate.pass, true);
  assert.equal(gate.first_bad_replay, null);
  assert.equal(gate.mode, 'graph');
  assert.equal(gate.graph_hashes.length, 7);
  assert.deepEqual(gate.graph_hashes, gate.eager_hashes);
  assert.equal(new Set(gate.eager_hashes).size, 7, 'every decode step is a different token');
  const capture = only(r.lines, 'capture');
  assert.ok(capture.ok);
  assert.equal(capture.nodes, capture.launches);
  assert.equal(gate.final, true);
});

test('decode with freeze_pointer: replay 1 passes, the gate fails first at replay 2, exit 5', { skip }, () => {
  const r = runGraphrt(['run', ...cpu, '--workload', 'decode', '--graph', '--freeze-pointer', '--identity', '7']);
  assert.equal(r.code, 5);
  const gate = only(r.lines, 'gate');
  assert.equal(gate.pass, false);
  assert.equal(gate.first_bad_replay, 2);
  assert.equal(gate.graph_hashes[0], gate.eager_hashes[0], 'replay 1 executes exactly what was captured');
  assert.notEqual(gate.graph_hashes[1], gate.eager_hashes[1]);
  assert.equal(gate.final, undefined, 'the GATE_FAILED error line is the final line');
  const err = only(r.lines, 'error');
  assert.equal(err.code, 'GATE_FAILED');
  assert.equal(err.exit_code, 5);
  assert.equal(r.lines.at(-1), err);
  assert.match(r.stderr, /"code":"GATE_FAILED"/);
});

test('train: unpinned graph diverges from the eager oracle; pinned is bit-identical over 8 steps, P reported', {
  skip,
}, () => {
  const sizes = ['--workload', 'train', '--params', '6', '--param-size', '64', '--warmup', '0', '--steps', '8'];
  const oracle = only(runGraphrt(['run', ...cpu, ...sizes]).lines, 'rep');
  assert.equal(oracle.mode, 'eager');
  assert.deepEqual(oracle.train, { L: 18, P: 0, win: true });

  const unpinned = only(runGraphrt(['run', ...cpu, ...sizes, '--graph']).lines, 'rep');
  assert.equal(unpinned.mode, 'graph');
  assert.equal(unpinned.hashes[0], oracle.hashes[0]);
  for (let k = 1; k < 8; k++)
    assert.notEqual(unpinned.hashes[k], oracle.hashes[k], `step ${k + 1} reads stale weights`);

  const pinned = only(runGraphrt(['run', ...cpu, ...sizes, '--graph', '--pin']).lines, 'rep');
  assert.equal(pinned.mode, 'graph');
  assert.deepEqual(pinned.hashes, oracle.hashes);
  assert.deepEqual(pinned.train, { L: 24, P: 6, win: true });
  assert.equal(pinned.dispatches_per_step, 1);
  assert.equal(pinned.nodes, 24);
});

test('lazy_init under graph: capture fails with a reason, the run completes eagerly with correct hashes', {
  skip,
}, () => {
  const expected = only(runGraphrt(['run', ...cpu, '--workload', 'decode']).lines, 'rep');
  const r = runGraphrt(['run', ...cpu, '--workload', 'decode', '--graph', '--lazy-init']);
  assert.equal(r.code, 0);
  const capture = only(r.lines, 'capture');
  assert.equal(capture.ok, false);
  if (capture.ok) return;
  assert.match(capture.reason, /allocation/);
  assert.equal(capture.fallback, 'eager');
  const rep = only(r.lines, 'rep');
  assert.equal(rep.mode, 'eager');
  assert.equal(rep.nodes, null);
  assert.deepEqual(rep.hashes, expected.hashes);
});

test('A/A: the same arm twice gives identical hashes (and graph equals eager)', { skip }, () => {
  const arm = ['run', ...cpu, '--workload', 'decode', '--graph', '--split-combine', '--overlap', '--arm', 'x'];
  const a = only(runGraphrt(arm).lines, 'rep');
  const b = only(runGraphrt(arm).lines, 'rep');
  assert.deepEqual(a.hashes, b.hashes);
  const eager = only(runGraphrt(['run', ...cpu, '--workload', 'decode']).lines, 'rep');
  assert.deepEqual(a.hashes, eager.hashes);
});

test('pdl on the cpu backend is accepted and reported unsupported', { skip }, () => {
  const rep = only(runGraphrt(['run', ...cpu, '--workload', 'chain', '--pdl', '--pin']).lines, 'rep');
  assert.deepEqual(rep.unsupported, ['pdl', 'pin']);
});

test('the probe workload: five self-checks, all pass, the last one final', { skip }, () => {
  const r = runGraphrt([
    'run',
    ...cpu,
    '--workload',
    'probe',
    '--kernels',
    '32',
    '--params',
    '4',
    '--param-size',
    '32',
  ]);
  assert.equal(r.code, 0);
  const probes = r.lines.filter((l) => l.type === 'probe');
  assert.deepEqual(
    probes.map((p) => p.name),
    ['launch_counter', 'unpinned_diverges', 'recapture_refusals', 'pinned_exact', 'replay_dispatch'],
  );
  for (const p of probes) assert.equal(p.pass, true, `${p.name}: ${JSON.stringify(p.detail)}`);
  assert.equal(probes.at(-1)?.final, true);
});

const badInputs: { args: string[]; code: string; exit: number }[] = [
  { args: ['run', ...cpu, '--workload', 'nope'], code: 'UNKNOWN_WORKLOAD', exit: 2 },
  { args: ['run', ...cpu, '--pld'], code: 'UNKNOWN_TOGGLE', exit: 2 },
  { args: ['run', ...cpu, '--frobnicate'], code: 'BAD_FLAG', exit: 2 },
  { args: ['run', ...cpu, '--hidden', '-4'], code: 'BAD_PARAM', exit: 2 },
  { args: ['run', ...cpu, '--steps', '0'], code: 'BAD_PARAM', exit: 2 },
  { args: ['run', ...cpu, '--layers', '256', '--hidden', '1024'], code: 'BAD_PARAM', exit: 2 },
  { args: ['run', ...cpu, '--steps'], code: 'BAD_FLAG', exit: 2 },
  { args: ['dance'], code: 'BAD_FLAG', exit: 2 },
  { args: ['run', '--backend', 'tpu'], code: 'BAD_FLAG', exit: 2 },
  { args: ['serve', ...cpu, '--graph'], code: 'BAD_FLAG', exit: 2 },
];

for (const c of badInputs) {
  test(`bad input ${c.args.join(' ')} → ${c.code}, exit ${c.exit}`, { skip }, () => {
    const r = runGraphrt(c.args);
    assert.equal(r.code, c.exit);
    const err = only(r.lines, 'error');
    assert.equal(err.code, c.code);
    assert.equal(err.exit_code, c.exit);
    assert.equal(r.lines.at(-1), err);
    const stderrLine = JSON.parse(r.stderr.trim().split('\n').at(-1) ?? '{}') as { code?: string };
    assert.equal(stderrLine.code, c.code, 'the final error line also goes to stderr');
  });
}

test('a backend that is not available → BACKEND_UNAVAILABLE, exit 3', { skip }, (t) => {
  // Without a GPU, cuda is either not built or sees no device: both are exit 3.
  const hello = runGraphrt(['hello', '--backend', 'auto']);
  if (only(hello.lines, 'hello').backend === 'cuda') return t.skip('a GPU is visible here: cuda is available');
  const r = runGraphrt(['run', '--backend', 'cuda', '--workload', 'chain']);
  assert.equal(r.code, 3);
  assert.equal(only(r.lines, 'error').code, 'BACKEND_UNAVAILABLE');
});
