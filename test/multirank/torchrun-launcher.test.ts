/**
 * `workload.run.launcher: torchrun` (jobs/spec-schema/launcher.ts, worker/command/command-gang.ts):
 * test/fixtures/ranks/torchrun-program.py, a program that reads nothing but torchrun's environment
 * and refuses to run unless torchelastic launched it, runs as a 2-rank per_rep gang on two cpu
 * cards through `orch submit` (the embedded default), its ranks meeting through gloo; without the
 * key it refuses, so the key is what makes it run. A spec with the key validates; a run.cmd that
 * starts torchrun itself is refused with the fix. The cuda side (every card of the host's part
 * visible, in local-rank order) is the pure visibleDevices, checked here without a GPU.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { torchrunEnv, visibleDevices } from '../../worker/command/command-gang.ts';
import { runOrch, STACK_FRAME } from '../cli/run-orch.ts';
import { suiteSkip, torchMissing } from '../utils/required-suite.ts';
import { submitSpec } from '../utils/submit-spec.ts';

const PROGRAM = new URL('../fixtures/ranks/torchrun-program.py', import.meta.url).pathname;
const embedded = { REDIS_URL: '', ORCH_PREFIX: '', ORCH_LOG: 'warn', ORCH_CPU_CARDS: '2' };

function spec(o: { cmd: string; launcher: string | null; seenDir: string }): string {
  return `name: torchrun-gang
design: ab
workload:
  runtime: command
  run:
    cmd: ${o.cmd}
${o.launcher === null ? '' : `    launcher: ${o.launcher}\n`}    env: { TORCHRUN_SEEN_DIR: ${JSON.stringify(o.seenDir)}, STEPS: "6" }
    timeout_s: 120
  toggles: { X: { env: X, on: "1", off: "0" } }
  metric_source: { format: jsonl, field: ms, step_field: step }
  warmup: 1
  steps: 5
toggles: [X]
arms:
  - { name: off, toggles: { X: false } }
  - { name: on, toggles: { X: true } }
reps: 2
blocks: { count: 1, ranks: 2 }
gates: { identity: false }
metric: { name: ms_per_step, better: lower }
`;
}

function validate(yaml: string): { status: number | null; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'orch-launcher-'));
  try {
    const file = join(dir, 'spec.yaml');
    writeFileSync(file, yaml);
    return runOrch(['validate', file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('launcher: torchrun, the spec', () => {
  test('validates; a run.cmd that starts torchrun itself, or another launcher, is refused with the fix', () => {
    const ok = validate(spec({ cmd: `/usr/bin/python3 ${PROGRAM}`, launcher: 'torchrun', seenDir: '/tmp' }));
    assert.equal(ok.status, 0, ok.stderr);
    for (const cmd of [
      `torchrun --nproc-per-node 2 ${PROGRAM}`,
      `OMP_NUM_THREADS=4 /usr/bin/python3 -m torch.distributed.run --nproc-per-node 2 ${PROGRAM}`,
    ]) {
      const bad = validate(spec({ cmd, launcher: null, seenDir: '/tmp' }));
      assert.equal(bad.status, 2, `${cmd}: ${bad.stderr}`);
      assert.match(
        bad.stderr,
        /workload\.run\.cmd: run\.cmd starts torchrun, which would start its own worker processes/,
      );
      assert.match(bad.stderr, /set run\.launcher: torchrun/);
      assert.doesNotMatch(bad.stderr, STACK_FRAME);
    }
    const other = validate(spec({ cmd: `/usr/bin/python3 ${PROGRAM}`, launcher: 'mpirun', seenDir: '/tmp' }));
    assert.equal(other.status, 2, other.stderr);
    assert.match(other.stderr, /workload\.run\.launcher/);
  });

  test("cuda: every card of the host's part, in local-rank order, so cuda:LOCAL_RANK is the rank's own; run.env keeps what it sets", () => {
    const gang = {
      masterAddr: '127.0.0.1',
      masterPort: 29500,
      localRank: 1,
      localWorld: 2,
      groupRank: 1,
      runId: 'e.b0.a1',
      localDevices: ['GPU-a', 'GPU-b'],
    };
    const card = { backend: 'cuda' as const, uuid: 'GPU-b' };
    assert.equal(visibleDevices(card, gang, 'torchrun'), 'GPU-a,GPU-b');
    assert.equal(visibleDevices(card, gang, undefined), 'GPU-b', 'without the launcher: its own card only');
    assert.equal(visibleDevices({ backend: 'cpu', uuid: '' }, gang, 'torchrun'), '');
    const env = torchrunEnv(gang, 3, 4, { launcher: 'torchrun', env: { OMP_NUM_THREADS: '8' } });
    assert.equal(env.OMP_NUM_THREADS, undefined, "run.env's OMP_NUM_THREADS is the program's, not replaced");
    assert.deepEqual(
      [
        env.ROLE_RANK,
        env.ROLE_WORLD_SIZE,
        env.GROUP_WORLD_SIZE,
        env.GROUP_RANK,
        env.LOCAL_RANK,
        env.TORCHELASTIC_RUN_ID,
      ],
      ['3', '4', '2', '1', '1', 'e.b0.a1'],
    );
    assert.equal(torchrunEnv(gang, 3, 4).TORCHELASTIC_RUN_ID, undefined, 'without the launcher: the rendezvous only');
  });
});

describe('launcher: torchrun, a torchrun-only program as a 2-rank gang on cpu cards', {
  skip: suiteSkip('torch', torchMissing()),
}, () => {
  test("runs with torchrun's environment on both ranks; without the key the program refuses", () => {
    const seen = mkdtempSync(join(tmpdir(), 'orch-torchrun-seen-'));
    try {
      const cmd = `/usr/bin/python3 ${PROGRAM}`;
      const r = submitSpec('torchrun-gang', spec({ cmd, launcher: 'torchrun', seenDir: seen }), embedded);
      // the two arms run one program: their verdict is the noise of two busy cores (faster, slower or
      // inconclusive), never what this test is about; the measured reps below are
      assert.ok([0, 3, 4].includes(r.code ?? -1), r.output);
      const ranks = [0, 1].map(
        (i) => JSON.parse(readFileSync(join(seen, `rank${i}.json`), 'utf8')) as Record<string, string>,
      );
      const experiment = r.summary.experiment as string;
      for (const [i, env] of ranks.entries()) {
        assert.equal(env.RANK, String(i));
        assert.equal(env.ROLE_RANK, String(i));
        assert.equal(env.LOCAL_RANK, String(i));
        assert.equal(env.TORCHELASTIC_RUN_ID, `${experiment}.b0.a1`);
      }
      assert.equal(ranks[0]!.MASTER_PORT, ranks[1]!.MASTER_PORT);
      const reps = r.events.filter((e) => e.event.type === 'rep' && e.committed);
      assert.deepEqual([...new Set(reps.map((e) => e.rank))].sort(), [0, 1], 'both ranks measured their reps');

      const without = submitSpec('torchrun-gang-plain', spec({ cmd, launcher: null, seenDir: seen }), embedded);
      assert.notEqual(without.code, 0, without.output);
      assert.match(without.output + JSON.stringify(without.events), /not launched by torchrun/);
    } finally {
      rmSync(seen, { recursive: true, force: true });
    }
  });
});
