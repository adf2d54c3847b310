/**
 * One rep of a command workload as a real process: toggles reach it as env vars and arguments,
 * the card's flock is held for its life, it dies with the worker (kill -9), and a run that
 * prints no metric line or exits non-zero is an error naming the spec path.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { OrchError, UserInputError } from '../../jobs/errors.ts';
import { toCommandInvocation } from '../../worker/command/command-invocation.ts';
import { type CommandWorkloadInput, runCommandRep } from '../../worker/command/run-command-rep.ts';
import { lockUsers } from '../../worker/foreign-processes.ts';
import { FIXTURES, isAlive } from '../build/build-helpers.ts';
import { waitFor } from '../utils/wait-for.ts';

const REP_CLIENT = fileURLToPath(new URL('./rep-client.ts', import.meta.url));

const dir = () => mkdtempSync(join(tmpdir(), 'orch-rep-'));

function workload(cmd: string, extra: Partial<CommandWorkloadInput> = {}): CommandWorkloadInput {
  return {
    run: { cmd, timeout_s: 30 },
    toggles: { FAST: { env: 'SPEEDY_FAST', on: '1', off: '0' }, EXTRA: { arg_on: '--extra --level 2', arg_off: '' } },
    metric_source: { format: 'jsonl', field: 'ms', step_field: 'step' },
    warmup: 1,
    steps: 2,
    ...extra,
  };
}

// Prints steps 0..ORCH_TOTAL_STEPS-1 with the env toggle's value as ms, and its own arguments.
const ECHO = `sh -c 'i=0; while [ $i -lt $ORCH_TOTAL_STEPS ]; do echo "{\\"step\\":$i,\\"ms\\":$SPEEDY_FAST}"; i=$((i+1)); done; echo "args:$*"' run`;

describe('command rep', () => {
  test('toggles become env values and arguments; ORCH_* variables size the run', () => {
    const inv = toCommandInvocation(
      workload('bin/train'),
      { name: 'b', toggles: { FAST: true, EXTRA: true } },
      '/cache/k',
    );
    assert.equal(inv.cmd, 'bin/train --extra --level 2');
    assert.deepEqual(inv.env, {
      ORCH_WARMUP: '1',
      ORCH_STEPS: '2',
      ORCH_TOTAL_STEPS: '3',
      ORCH_ARM: 'b',
      ORCH_ARTIFACTS: '/cache/k',
      SPEEDY_FAST: '1',
    });
    assert.equal(
      toCommandInvocation(workload('bin/train'), { name: 'a', toggles: { FAST: false, EXTRA: false } }, null).env
        .SPEEDY_FAST,
      '0',
    );
    // one truthiness rule (jobs/rank-protocol-constants.ts toggleIsOn), as the arms and both rank libraries read a value
    const value = (v: string) =>
      toCommandInvocation(workload('bin/train'), { name: 's', toggles: { FAST: v } }, null).env.SPEEDY_FAST;
    assert.deepEqual(['true', 'on', 'off', 'false', 'yes'].map(value), ['1', '1', '0', '0', '0']);
    assert.throws(
      () => toCommandInvocation(workload('x'), { name: 'a', toggles: { GRAPH: true } }, null),
      /arm "a" sets toggle "GRAPH" but workload.toggles has no mapping for it \(mapped: FAST, EXTRA\)/,
    );
  });

  test("a rep runs the command with the arm's toggles and returns the measured steps", async () => {
    const lines: string[] = [];
    const r = await runCommandRep({
      workload: workload(ECHO),
      arm: { name: 'fast', toggles: { FAST: true, EXTRA: true } },
      artifactDir: null,
      cardLock: join(dir(), 'card.lock'),
      onLine: (_s, l) => lines.push(l),
    });
    assert.deepEqual(r.step_ms, [1, 1]);
    assert.deepEqual(r.steps, [1, 2]);
    assert.equal(r.excluded, 1);
    assert.equal(lines.at(-1), 'args:--extra --level 2');
  });

  test('the card flock is held while the process runs; a second process on the card is refused', async () => {
    const lock = join(dir(), 'card.lock');
    const first = runCommandRep({
      workload: workload(`sleep 1; ${ECHO}`),
      arm: { name: 'a', toggles: { FAST: false } },
      artifactDir: null,
      cardLock: lock,
    });
    const holders = await waitFor(
      'the card lock to be held',
      () => (lockUsers(lock).length > 0 ? lockUsers(lock) : null),
      { timeoutMs: 5000 },
    );
    assert.match(holders[0]!.name, /^\/\S*\/flock -n -o -E 199 /, "orch's own flock, by its absolute path");
    await assert.rejects(
      runCommandRep({
        workload: workload(ECHO),
        arm: { name: 'b', toggles: { FAST: false } },
        artifactDir: null,
        cardLock: lock,
      }),
      (e: unknown) =>
        e instanceof OrchError &&
        e.code === 'CARD_BUSY' &&
        e.message.startsWith(`the card lock ${lock} is held by another process`),
    );
    await first;
    assert.deepEqual(lockUsers(lock), []);
  });

  test('a run that prints no metric line: an error naming workload.metric_source with its last output', async () => {
    await assert.rejects(
      runCommandRep({
        workload: workload(`sh ${join(FIXTURES, 'cmd-no-metric', 'run.sh')}`),
        arm: { name: 'a', toggles: {} },
        artifactDir: null,
        cardLock: join(dir(), 'c.lock'),
      }),
      (e: unknown) =>
        e instanceof UserInputError &&
        e.code === 'METRIC_NO_LINES' &&
        /^workload\.metric_source: the run printed no metric line \(arm "a", command: sh \S+run\.sh\); last output:\n(.|\n)* {2}\| step 2 loss=3\.22\n {2}\| done$/.test(
          e.message,
        ),
    );
  });

  test('a run that exits non-zero: an error naming workload.run.cmd with its last output', async () => {
    await assert.rejects(
      runCommandRep({
        workload: workload('echo "CUDA error: an illegal memory access" >&2; exit 6'),
        arm: { name: 'a', toggles: {} },
        artifactDir: null,
        cardLock: join(dir(), 'c.lock'),
      }),
      (e: unknown) =>
        e instanceof UserInputError &&
        e.code === 'COMMAND_FAILED' &&
        /^workload\.run\.cmd exited 6 after [0-9.]+ s \(arm "a", command: .*\); last output:\n {2}\| \[stderr\] CUDA error: an illegal memory access$/.test(
          e.message,
        ),
    );
  });

  test('kill -9 of the worker in the middle of a rep: the process dies with it and the card lock is free', async () => {
    const d = dir();
    const lock = join(d, 'card.lock');
    const pidFile = join(d, 'pid');
    const input = {
      workload: workload(`echo $$ > ${pidFile}; exec sleep 60`),
      arm: { name: 'a', toggles: {} },
      artifactDir: null,
      cardLock: lock,
    };
    const worker = spawn(process.execPath, ['--import', 'tsx', REP_CLIENT], {
      env: { ...process.env, ORCH_TEST_REP: JSON.stringify(input) },
      stdio: 'ignore',
    });
    const pid = await waitFor('the rep process to start', () => Number(readFileSync(pidFile, 'utf8').trim()) || null, {
      timeoutMs: 10_000,
    });
    await waitFor('the card lock to be held', () => lockUsers(lock).length > 0, { timeoutMs: 5000 });
    const killed = Date.now();
    worker.kill('SIGKILL');
    await waitFor('the rep process to die with its worker', () => !isAlive(pid), { timeoutMs: 3000 });
    await waitFor('the card lock to be free', () => lockUsers(lock).length === 0, { timeoutMs: 3000 });
    console.log(`kill -9 of the worker: rep process ${pid} gone and card lock free ${Date.now() - killed} ms later`);
  });
});
