/**
 * A resident command rank (worker/command/resident-command-rank.ts) against a fixture program
 * that speaks the orch-rank protocol (test/fixtures/ranks/orch-rank.mjs): what the worker makes of
 * a program that works, and of every bad input ranklib/PROTOCOL.md lists — each a clear reason,
 * never a measurement: no hello (the message names the protocol and the libraries), another
 * protocol version, garbage on the protocol stream, a 1 MiB line, another request's id, a hang
 * mid-rep, an exit 0 before the block ends (its status and last stderr lines), an answer of other
 * step counts than asked, a toggle the program does not understand. The identity gate is judged
 * here, from the program's hashes: the planted bug fails it at replay 2, naming the output.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import type { BlockJob } from '../../jobs/block-job.ts';
import type { Card } from '../../jobs/card.ts';
import { kindOf } from '../../jobs/error-codes.ts';
import type { RankLine } from '../../jobs/rank-line.ts';
import { CommandWorkloadSchema } from '../../jobs/spec-schema/command-workload.ts';
import { ResidentCommandRank } from '../../worker/command/resident-command-rank.ts';
import { armOf, type RankOp } from '../../worker/rank-runner.ts';
import { blockJob } from '../utils/block-jobs.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/ranks/orch-rank.mjs', import.meta.url));
const card: Card = { id: 'cpu:0@rr', host: 'rr', backend: 'cpu', index: 0, uuid: 'cpu:0@rr', name: 'cpu' };

interface Extra {
  helloTimeoutS?: number;
  timeoutS?: number;
  launchCounts?: boolean;
  card?: Card;
  injectLib?: string;
}

function job(env: Record<string, string>, extra: Extra = {}): BlockJob {
  const workload = CommandWorkloadSchema.parse({
    runtime: 'command',
    run: {
      cmd: `${JSON.stringify(process.execPath)} ${JSON.stringify(FIXTURE)}`,
      mode: 'resident',
      env,
      timeout_s: extra.timeoutS ?? 60,
      ...(extra.helloTimeoutS === undefined ? {} : { hello_timeout_s: extra.helloTimeoutS }),
      ...(extra.launchCounts === undefined ? {} : { launch_counts: extra.launchCounts }),
    },
    toggles: { GRAPH: 'request', STALE: 'request' },
    params: { layers: 2 },
    warmup: 2,
    steps: 3,
  });
  return blockJob({
    experiment: 'rr',
    block: 0,
    attempt: 1,
    epoch: 1,
    host: 'rr',
    cards: [(extra.card ?? card).id],
    workload,
    warmup: 2,
    steps: 3,
    arms: [
      { name: 'eager', toggles: { GRAPH: false, STALE: false } },
      { name: 'graph', toggles: { GRAPH: true, STALE: false } },
      { name: 'stale', toggles: { GRAPH: true, STALE: true } },
    ],
    sequence: ['eager', 'graph', 'stale'],
    gates: { identity: { replays: 7, toggle: 'GRAPH' }, aa: false },
  });
}

function start(
  env: Record<string, string> = {},
  extra: Extra = {},
): { rank: ResidentCommandRank; lines: RankLine[]; j: BlockJob } {
  const j = job(env, extra);
  const lines: RankLine[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'orch-rr-'));
  const rank = new ResidentCommandRank(
    {
      job: j,
      rank: 0,
      world: 1,
      card: extra.card ?? card,
      lockPath: join(dir, 'card.lock'),
      log: pino({ level: 'silent' }),
      onLine: (l) => lines.push(l),
    },
    j.workload as Extract<BlockJob['workload'], { runtime: 'command' }>,
    { buildRoot: dir, minFreeDiskGb: 0, ...(extra.injectLib === undefined ? {} : { injectLib: extra.injectLib }) },
    () => Promise.reject(new Error('no build in these tests')),
  );
  return { rank, lines, j };
}

const op = (j: BlockJob, kind: RankOp['op'], arm: string, i = 0): RankOp => ({
  id: `b0-a1-${kind}${i}`,
  op: kind,
  arm: armOf(j, arm),
});
const failure = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as Error & { code: string },
  );

describe('a resident command rank', () => {
  test('a program that works: one process for every rep, its hello checked, reps and gates as command lines, stderr as output', async () => {
    const { rank, lines, j } = start();
    try {
      const hello = await rank.ready;
      assert.equal(hello.program?.protocol, 'orch-rank');
      assert.deepEqual(hello.program?.outputs, ['y']);
      const pid = rank.pids()[0];
      const reps = [];
      for (const [i, arm] of ['eager', 'graph', 'graph'].entries())
        reps.push(await rank.request(op(j, 'rep', arm, i), 10_000));
      assert.equal(rank.pids()[0], pid, 'the same program served every rep');
      const [eager, fresh, reused] = reps;
      assert.ok(eager?.type === 'rep' && fresh?.type === 'rep' && reused?.type === 'rep');
      assert.deepEqual([eager.mode, fresh.mode, fresh.graph, reused.graph], ['eager', 'graph', 'fresh', 'reused']);
      assert.equal(eager.step_ms.length, 3);
      assert.deepEqual(eager.warmup_ms, [0.5, 0.5]);
      assert.deepEqual(eager.hashes, fresh.hashes, 'one hash per step over the outputs, equal for equal steps');
      assert.ok(typeof eager.t_start_ns === 'number' && typeof eager.t_end_ns === 'number');
      const gate = await rank.request(op(j, 'identity', 'graph'), 10_000);
      assert.ok(gate.type === 'gate' && 'first_bad_output' in gate);
      assert.deepEqual([gate.pass, gate.first_bad_replay, gate.first_bad_output, gate.replays], [true, null, null, 7]);
      const stale = await rank.request(op(j, 'identity', 'stale', 1), 10_000);
      assert.ok(stale.type === 'gate' && 'first_bad_output' in stale);
      assert.deepEqual(
        [stale.pass, stale.first_bad_replay, stale.first_bad_output],
        [false, 2, 'y'],
        'the planted stale input fails at replay 2, naming the output',
      );
      const output = lines.filter((l) => l.type === 'output');
      assert.ok(
        output.some(
          (l) =>
            l.type === 'output' && l.stream === 'stderr' && /fixture rank up with params \{"layers":2\}/.test(l.line),
        ),
        'setup saw ORCH_PARAMS; stderr reached the stream',
      );
      assert.deepEqual(
        lines.filter((l) => l.type !== 'output').map((l) => l.type),
        ['hello', 'rep', 'rep', 'rep', 'gate', 'gate'],
      );
    } finally {
      const exit = await rank.close(2_000);
      assert.equal(exit.code, 0, 'stdin closed: the program ends by itself');
    }
  });

  test('no hello in time: a protocol fault naming the protocol and both libraries', async () => {
    const { rank } = start({ FIXTURE_MODE: 'silent' }, { helloTimeoutS: 1 });
    const err = await failure(rank.ready);
    assert.equal(err?.code, 'RANK_PROTOCOL');
    assert.match(
      err!.message,
      /no hello within 1000 ms: .*orch-rank protocol \(ranklib\/PROTOCOL\.md\).*orch_rank \(Python, ranklib\/python\) or orch_rank\.h/,
    );
    assert.equal(kindOf(err!), 'deterministic', 'not retried');
    await rank.exited;
  });

  test('another protocol version: refused at hello, naming both', async () => {
    const { rank } = start({ FIXTURE_MODE: 'version2' });
    const err = await failure(rank.ready);
    assert.equal(err?.code, 'RANK_PROTOCOL');
    assert.match(err!.message, /the program speaks "orch-rank" version 2; this worker speaks orch-rank version 1/);
    await rank.exited;
  });

  test('a toggle the program does not understand: refused at hello, before any rep', async () => {
    const { rank } = start({ FIXTURE_MODE: 'lacks-toggle' });
    const err = await failure(rank.ready);
    assert.equal(err?.code, 'RANK_TOGGLE_UNKNOWN');
    assert.match(err!.message, /does not understand "STALE"; it understands GRAPH/);
    assert.equal(kindOf(err!), 'user-input');
    await rank.exited;
  });

  for (const [mode, why] of [
    ['garbage', /not a JSON line of the orch-rank protocol .*: loss: 0\.25 \(a print\(\) on stdout\)/],
    ['long', /a stdout line longer than 1 MiB/],
    ['wrong-id', /a "rep" line of id someone-else, arm eager with request b0-a1-rep0 \(arm eager\) in flight/],
    ['few-steps', /rep b0-a1-rep0 has 2 step times; 3 steps were asked/],
  ] as const) {
    test(`${mode}: the rep fails with RANK_PROTOCOL and the rank is killed`, async () => {
      const { rank, j } = start({ FIXTURE_MODE: mode });
      await rank.ready;
      const err = await failure(rank.request(op(j, 'rep', 'eager'), 10_000));
      assert.equal(err?.code, 'RANK_PROTOCOL', String(err));
      assert.match(err!.message, why);
      const exit = await rank.exited;
      assert.equal(exit.signal, 'SIGKILL');
    });
  }

  test('a hang mid-rep: RANK_TIMEOUT after the request timeout (run.timeout_s bounds it)', async () => {
    const { rank, j } = start({ FIXTURE_MODE: 'hang' }, { timeoutS: 1 });
    await rank.ready;
    const err = await failure(rank.request(op(j, 'rep', 'eager'), 60_000));
    assert.equal(err?.code, 'RANK_TIMEOUT');
    assert.match(err!.message, /did not answer rep b0-a1-rep0 \(arm eager\) within 1000 ms/);
    rank.kill();
    await rank.exited;
  });

  test("another profiler's CUDA_INJECTION64_PATH on a cuda card with counts on: refused before the program starts, not replaced", async () => {
    const gpu: Card = { id: 'GPU-rr', host: 'rr', backend: 'cuda', index: 0, uuid: 'GPU-rr', name: 'NVIDIA H200' };
    const { rank } = start(
      { CUDA_INJECTION64_PATH: '/opt/nsight/libToolsInjection64.so' },
      { card: gpu, launchCounts: true, injectLib: '/opt/orch/liborch_inject.so' },
    );
    const err = await failure(rank.ready);
    assert.equal(err?.code, 'RANK_INJECTION_TAKEN', String(err));
    assert.match(
      err!.message,
      /^CUDA_INJECTION64_PATH is already \/opt\/nsight\/libToolsInjection64\.so for this rank .*do not replace it$/,
    );
    rank.kill();
    assert.equal((await rank.exited).pid, null, 'no program was started');
  });

  // 3 is a deterministic exit of graphrt's (native/PROTOCOL.md), which a user's program does not speak
  for (const [mode, status] of [
    ['exit0', 'code 0, signal none'],
    ['crash', 'code 3, signal none'],
  ] as const) {
    test(`${mode}: a program that ends mid-block fails the rep in flight with its exit status and the last stderr lines (retried)`, async () => {
      const { rank, j } = start({ FIXTURE_MODE: mode });
      await rank.ready;
      await rank.request(op(j, 'rep', 'eager'), 10_000);
      const err = await failure(rank.request(op(j, 'rep', 'graph', 1), 10_000));
      assert.equal(err?.code, 'RANK_DIED', String(err));
      assert.equal(kindOf(err!), 'transient', 'the block is retried, as for any rank that dies');
      assert.match(
        err!.message,
        new RegExp(
          `exited with ${status}; last error: traceback line 1 \\| traceback line 2 \\| traceback line 3 \\| traceback line 4 \\| traceback line 5$`,
        ),
      );
    });
  }
});
