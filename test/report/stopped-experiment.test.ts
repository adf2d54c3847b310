/**
 * orchestrator/results/stopped-experiment.ts: an experiment that ended cancelled or failed has
 * that as its outcome, and a failure is the user's input (exit 2) exactly when the first
 * registered error code its reason names is of that kind — the reasons as the scheduler writes
 * them (build-phase.ts buildFailureReason, a refused submission, a block's failure).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXIT_CODES, outcomeExitCode } from '../../orchestrator/report/outcome-exit-code.ts';
import { stoppedExperiment } from '../../orchestrator/results/stopped-experiment.ts';
import { buildFailureReason } from '../../orchestrator/scheduler/build-phase.ts';

const exitOf = (state: 'done' | 'failed' | 'cancelled', reason: string | null) => {
  const stopped = stoppedExperiment({ state, reason });
  return stopped ? outcomeExitCode({ verdict: stopped.state, stopped }) : null;
};

test("the outcome of an experiment that ended early, and when a failure is the user's input", () => {
  assert.equal(
    stoppedExperiment({ state: 'done', reason: null }),
    null,
    'one that ran to its end has a verdict instead',
  );
  const build = buildFailureReason({
    code: 'BUILD_FAILED',
    message: 'BUILD_FAILED: workload.build.cmd: the build "sh build.sh" exited 1',
    host: 'h1',
    at: 0,
  });
  assert.equal(exitOf('failed', build), 2, build);
  assert.equal(exitOf('failed', 'SUBMIT_UNAUTHORIZED: the submit signature does not verify'), 2);
  // a rank that died is no input of the user's: the failed outcome's own code
  assert.equal(
    exitOf('failed', 'block 0: attempt 1 failed: RANK_EXITED: rank 0 on card cpu:0@h1 exited 2'),
    EXIT_CODES.failed,
  );
  assert.equal(exitOf('failed', 'block 1: the block ended without an outcome'), EXIT_CODES.failed);
  // words in capitals that are no registered code decide nothing
  assert.equal(exitOf('failed', 'NOT_A_CODE: then SPEC_INVALID: later'), 2, 'the first registered code decides');
  assert.equal(exitOf('cancelled', 'cancelled by orch cancel'), EXIT_CODES.cancelled);
  assert.deepEqual(stoppedExperiment({ state: 'cancelled', reason: null }), {
    state: 'cancelled',
    reason: 'cancelled',
    user_input: false,
  });
});
