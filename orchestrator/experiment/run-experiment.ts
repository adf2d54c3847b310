/**
 * An experiment from submit to exit code, written once for `orch submit` on a cluster, the
 * embedded default and the nightly: submit (submit.ts), wait for the end (progress.ts), write
 * results/<id>/ (orchestrator/results/write-results.ts), and pick the exit code: the outcome's
 * under --fail-on (orchestrator/report/outcome-exit-code.ts), as `orch report` and `orch watch`
 * give it — a cancelled or failed experiment's outcome is that, never a verdict of its partial
 * data (orchestrator/results/stopped-experiment.ts).
 * `awaitResults` is the half after the submit, for a caller that submits several experiments
 * before waiting on any (the nightly).
 */
import type { Redis } from 'ioredis';
import { UserInputError } from '../../jobs/errors.ts';
import { ExperimentRetention, experimentTtlSeconds } from '../../store/experiment-retention.ts';
import { type ExperimentState, ExperimentStore } from '../../store/experiment-store.ts';
import { DEFAULT_FAIL_ON_SET, type FailOnSet, outcomeExitCode } from '../report/outcome-exit-code.ts';
import { type WrittenResults, writeResults } from '../results/write-results.ts';
import { waitForEnd } from './progress.ts';
import { type SubmitInput, type Submitted, submitExperiment } from './submit.ts';

export type WaitOptions = NonNullable<Parameters<typeof waitForEnd>[3]>;

export interface AwaitOptions {
  /** the directory results/<id>/ is written under */
  resultsRoot: string;
  wait?: WaitOptions;
  /** the outcomes that exit non-zero (default DEFAULT_FAIL_ON) */
  failOn?: FailOnSet;
  /**
   * After the wait, before the results are written: the state to write them in. The embedded
   * default cancels an interrupted run here and waits for it to settle, so its results say what
   * was and was not measured.
   */
  settle?: (id: string, state: ExperimentState) => Promise<ExperimentState>;
}

export interface ExperimentOutcome {
  id: string;
  state: ExperimentState;
  written: WrittenResults;
  exitCode: number;
}

/** Submit, wait, write, exit code. `onSubmitted` runs once the experiment is registered, before the wait. */
export async function runExperiment(
  input: SubmitInput & AwaitOptions & { onSubmitted?: (sub: Submitted) => void },
): Promise<ExperimentOutcome> {
  const { resultsRoot, wait, settle, failOn, onSubmitted, ...submit } = input;
  const sub = await submitExperiment(submit);
  onSubmitted?.(sub);
  return awaitResults(input.redis, input.prefix, sub.id, {
    resultsRoot,
    ...(wait ? { wait } : {}),
    ...(settle ? { settle } : {}),
    ...(failOn ? { failOn } : {}),
  });
}

/** Wait for a submitted experiment's end, write its results, pick its exit code. */
export async function awaitResults(
  redis: Redis,
  prefix: string,
  id: string,
  opts: AwaitOptions,
): Promise<ExperimentOutcome> {
  const exp = await new ExperimentStore(redis, prefix).get(id);
  if (!exp)
    throw new UserInputError(
      'NO_SUCH_EXPERIMENT',
      `no experiment "${id}" in this Redis (restarted without its data?)`,
      { hint: 'run orch status to list experiments' },
    );
  let state = await waitForEnd(redis, prefix, exp, opts.wait);
  if (opts.settle) state = await opts.settle(id, state);
  const written = await writeResults(redis, prefix, id, opts.resultsRoot);
  // on disk now: Redis keeps the experiment ORCH_EXPERIMENT_TTL_DAYS more (store/experiment-retention.ts)
  const ttl = experimentTtlSeconds();
  if (ttl !== null) await new ExperimentRetention(redis, prefix).expire(id, ttl);
  return { id, state, written, exitCode: outcomeExitCode(written.analysis, opts.failOn ?? DEFAULT_FAIL_ON_SET) };
}
