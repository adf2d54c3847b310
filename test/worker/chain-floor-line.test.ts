/**
 * What worker/command/chain-floor.ts reads from one `graphrt run` of the chain: a graph rep's
 * steps and node count, and, from the rep traced under orch's injection library, the
 * chain's busy time per kernel (`kernel_busy_ns`, native/PROTOCOL.md), which the floor's per-node cost loses
 * (orchestrator/stats/graph-node-floor.ts nodeCostNs).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { toChainFloorRun } from '../../jobs/native-args.ts';
import { readChainRep } from '../../worker/command/chain-floor.ts';

const GRAPHRT = fileURLToPath(new URL('../../native/build/graphrt', import.meta.url));
const skip = existsSync(GRAPHRT) || process.env.CI ? false : 'native/build/graphrt is not built';

const hello = JSON.stringify({
  v: 1,
  type: 'hello',
  backend: 'cuda',
  device: 'NVIDIA H200',
  sm: '9.0',
  sms: 132,
  driver: '580',
  features: { graph: true, pdl: true, overlap: true, collectives: false },
  version: '0.1.0',
  pid: 7,
  world: 1,
  rank: 0,
});
const rep = (extra: Record<string, unknown>) =>
  JSON.stringify({
    v: 1,
    type: 'rep',
    id: 'run',
    arm: 'graph-node-floor',
    workload: 'chain',
    backend: 'cuda',
    mode: 'graph',
    warmup: 4,
    steps: 2,
    step_ms: [0.25, 0.24],
    warmup_ms: [0.3, 0.3, 0.3, 0.3],
    launches_per_step: 0,
    dispatches_per_step: 1,
    collectives_per_step: 0,
    rank: 0,
    world: 1,
    nodes: 256,
    graph: 'fresh',
    settle_ms: 0.5,
    hashes: ['0000000000000000', '0000000000000000'],
    unsupported: [],
    t_start_ns: 1,
    t_end_ns: 2,
    final: true,
    ...extra,
  });

test("a traced chain rep's kernel_busy_ns is read beside its steps; an untraced rep has none", () => {
  const traced = readChainRep(`${hello}\n${rep({ kernel_busy_ns: 470.5 })}\n`, '', null);
  assert.ok('rep' in traced, JSON.stringify(traced));
  assert.equal(traced.kernelBusyNs, 470.5);
  assert.deepEqual(traced.rep, { mode: 'graph', nodes: 256, step_ms: [0.25, 0.24] });
  const plain = readChainRep(`${hello}\n${rep({})}\n`, '', null);
  assert.ok('rep' in plain && plain.kernelBusyNs === undefined, JSON.stringify(plain));
  // a negative run time is no measurement: the line is refused, not read
  const bad = readChainRep(`${hello}\n${rep({ kernel_busy_ns: -1 })}\n`, '', null);
  assert.ok('reason' in bad && /does not read/.test(bad.reason), JSON.stringify(bad));
});

test("the traced rep runs the chain eager (a user's busy is its eager arm's): graphrt's own eager line is read as such, and refused where a graph rep is wanted", {
  skip,
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-chain-eager-'));
  try {
    const { args } = toChainFloorRun({
      backend: 'cpu',
      uuid: '',
      lockFd: 3,
      kernels: 8,
      warmup: 1,
      steps: 2,
      mode: 'eager',
    });
    assert.ok(!args.includes('--graph'), args.join(' '));
    // fd 3: the card's lock file, opened and locked, as the worker hands it to graphrt
    const out = spawnSync(
      'sh',
      ['-c', `exec 3>"${join(dir, 'lock')}" && flock 3 && exec "$0" "$@"`, GRAPHRT, ...args],
      {
        encoding: 'utf8',
        env: { ...process.env, CUDA_VISIBLE_DEVICES: '' },
      },
    );
    assert.equal(out.status, 0, out.stdout + out.stderr);
    const eager = readChainRep(out.stdout, out.stderr, null, 'eager');
    assert.ok('rep' in eager, JSON.stringify(eager));
    assert.deepEqual([eager.rep.mode, eager.rep.nodes, eager.kernelBusyNs], ['eager', null, undefined]);
    const wrong = readChainRep(out.stdout, out.stderr, null, 'graph');
    assert.ok('reason' in wrong && /ran eager, not graph/.test(wrong.reason), JSON.stringify(wrong));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
