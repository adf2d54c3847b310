/**
 * One rep of a command workload: one process, started as
 *
 *     tether.sh flock -n -o -E 199 <card lock> /bin/sh -c '<run.cmd + arg toggles>'
 *
 * so the card's flock is held for the process's whole life (a second process on the card is
 * refused, exit 199 → CARD_BUSY), the process is fate-shared with this worker (tether.sh: its
 * own process group, SIGKILLed when the worker's pipe closes, kill -9 included), and its stdout
 * is parsed line by line by the workload's metric source (jobs/metric-source.ts). Warm-up steps
 * and step 0 are excluded by index; a run with no metric line is an error naming the spec path.
 */
import { statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { OrchError, UserInputError } from '../../jobs/errors.ts';
import { MAX_RANK_LINE_BYTES, MAX_RANK_LINE_LABEL } from '../../jobs/line-limit.ts';
import { MetricParser, type MetricSourceInput, selectMeasured } from '../../jobs/metric-source.ts';
import { requireHelper } from '../helper-paths.ts';
import { readLines } from '../line-reader.ts';
import { asUser, type RunAs, runAsEnv } from '../run-as.ts';
import { describeBlocker, searchBlocker } from '../run-as-reach.ts';
import { type CommandRunInput, type ToggleMappingInput, toCommandInvocation } from './command-invocation.ts';
import { programEnv } from './program-env.ts';
import { RepOutput } from './rep-output.ts';
import { spawnTethered } from './tether.ts';

/** flock(1)'s exit code when the card lock is taken (-E); above every 128+signal status. */
export const CARD_BUSY_EXIT = 199;

export interface CommandWorkloadInput {
  run: CommandRunInput & { timeout_s: number };
  toggles: Record<string, ToggleMappingInput>;
  metric_source: MetricSourceInput;
  warmup: number;
  steps: number;
}

export interface CommandRepInput {
  workload: CommandWorkloadInput;
  arm: { name: string; toggles: Record<string, boolean | string> };
  /** The build's artifact dir (ORCH_ARTIFACTS), null when the workload has no build. */
  artifactDir: string | null;
  /** The card's lock file; held by the process for its whole life. */
  cardLock: string;
  /** Where a relative run.cwd is resolved; default: the artifact dir, else the worker's cwd. */
  baseDir?: string;
  /** Extra environment, e.g. CUDA_VISIBLE_DEVICES of the leased card. */
  env?: Record<string, string>;
  /** Every output line as it arrives (for the experiment's event stream). */
  onLine?: (stream: 'stdout' | 'stderr', line: string) => void;
  /** Called with the pid of the process group leader once it runs. */
  onStart?: (pid: number) => void;
  /** Aborting kills the process group at once (lease lost). */
  signal?: AbortSignal;
  /** The user the command runs as (worker/run-as.ts); flock(1) and the tether stay the worker's. */
  runAs?: RunAs | null;
  /** Per-line time budget of a regex metric source (default METRIC_REGEX_BUDGET_MS). */
  regexBudgetMs?: number;
}

export interface CommandRepResult {
  arm: string;
  step_ms: number[];
  /** The step index of each value in step_ms. */
  steps: number[];
  /** Metric lines set aside as warm-up or step 0. */
  excluded: number;
  metric_lines: number;
  wall_ms: number;
  pid: number;
}

/**
 * Where the command runs: run.cwd, a relative one against `baseDir`, else the artifact dir, else
 * the worker's cwd; checked to exist, and to be one `runAs` can enter when programs run as it.
 */
export function commandCwd(
  given: string | undefined,
  artifactDir: string | null,
  baseDir?: string,
  runAs: RunAs | null = null,
): string {
  const base = baseDir ?? artifactDir ?? process.cwd();
  const cwd = given === undefined ? base : isAbsolute(given) ? given : resolve(base, given);
  checkCwd(given, cwd, baseDir ?? (artifactDir !== null ? "the build's artifact dir" : "the worker's cwd"));
  const blocker = runAs === null ? null : searchBlocker(cwd, runAs);
  if (runAs !== null && blocker !== null)
    throw new UserInputError(
      'RUN_AS_UNREACHABLE',
      `workload.run.cwd: the program would run in ${cwd}${given === undefined ? ` (${artifactDir !== null ? "the build's artifact dir" : "the worker's cwd"}: run.cwd is not set)` : ''}, but ${runAs.user}, the user this worker runs programs as (--run-as), cannot enter ${describeBlocker(blocker)}`,
      {
        hint: `set workload.run.cwd to a directory ${runAs.user} can enter (e.g. /tmp), or start the worker from one`,
      },
    );
  return cwd;
}

export async function runCommandRep(input: CommandRepInput): Promise<CommandRepResult> {
  const { workload, arm } = input;
  const inv = toCommandInvocation(workload, arm, input.artifactDir);
  const cwd = commandCwd(workload.run.cwd, input.artifactDir, input.baseDir, input.runAs ?? null);
  const what = `arm "${arm.name}", command: ${inv.cmd}`;
  const started = Date.now();
  // by its absolute path: the program's environment may carry the spec's PATH
  const p = spawnTethered(
    requireHelper('flock', "it holds the card's lock for the rep's process"),
    [
      '-n',
      '-o',
      '-E',
      String(CARD_BUSY_EXIT),
      input.cardLock,
      ...asUser(input.runAs ?? null, ['/bin/sh', '-c', inv.cmd]),
    ],
    {
      cwd,
      env: { ...programEnv({ ...inv.env, ...input.env }), ...runAsEnv(input.runAs ?? null) },
    },
  );
  if (p.child.pid !== undefined) input.onStart?.(p.child.pid);
  const out = new RepOutput(new MetricParser(workload.metric_source), () => p.killGroup(), what, {
    ...(input.regexBudgetMs !== undefined ? { regexBudgetMs: input.regexBudgetMs } : {}),
    ...(input.onLine ? { onLine: input.onLine } : {}),
  });
  readLines(p.child.stdout!, MAX_RANK_LINE_BYTES, {
    onLine: (line) => out.stdout(line),
    onTooLong: (head) => out.stdoutTooLong(head),
  });
  // stderr is only shown: an overlong line is kept by its head
  readLines(p.child.stderr!, MAX_RANK_LINE_BYTES, {
    onLine: (line) => out.keep('stderr', line),
    onTooLong: (head) => out.keep('stderr', `${head}… (longer than ${MAX_RANK_LINE_LABEL})`),
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    p.killGroup();
  }, workload.run.timeout_s * 1000);
  const onAbort = () => p.killGroup();
  if (input.signal?.aborted) p.killGroup();
  input.signal?.addEventListener('abort', onAbort, { once: true });
  let exit: { code: number | null; signal: NodeJS.Signals | null };
  try {
    exit = await p.exited;
  } finally {
    clearTimeout(timer);
    input.signal?.removeEventListener('abort', onAbort);
    await out.settle();
  }
  const wall_ms = Date.now() - started;
  out.throwIfFailed();
  const failed = exitFailure({
    exit,
    timedOut,
    signal: input.signal,
    wall_ms,
    what,
    out,
    cardLock: input.cardLock,
    timeout_s: workload.run.timeout_s,
  });
  if (failed) throw failed;
  const m = selectMeasured(out.samples, {
    warmup: workload.warmup,
    steps: workload.steps,
    describe: what,
    tail: out.last(),
  });
  return {
    arm: arm.name,
    step_ms: m.values,
    steps: m.steps,
    excluded: m.excluded,
    metric_lines: out.samples.length,
    wall_ms,
    pid: p.child.pid!,
  };
}

/** Why a rep's process ended without a measurement (aborted, timed out, card busy, a failed exit), or null when it exited 0. */
function exitFailure(r: {
  exit: { code: number | null; signal: NodeJS.Signals | null };
  timedOut: boolean;
  signal: AbortSignal | undefined;
  wall_ms: number;
  what: string;
  out: RepOutput;
  cardLock: string;
  timeout_s: number;
}): Error | null {
  if (r.signal?.aborted) {
    const why = r.signal.reason instanceof Error ? r.signal.reason.message : String(r.signal.reason);
    return new OrchError('COMMAND_ABORTED', `workload.run.cmd: killed (${why}) (${r.what})`, {
      cause: r.signal.reason,
    });
  }
  if (r.timedOut)
    return new UserInputError(
      'COMMAND_TIMEOUT',
      `workload.run.cmd: no exit after workload.run.timeout_s = ${r.timeout_s} s, killed (${r.what}); last output:\n${r.out.last()}`,
    );
  if (r.exit.code === CARD_BUSY_EXIT)
    return new OrchError(
      'CARD_BUSY',
      `the card lock ${r.cardLock} is held by another process; refusing to run a second process on the card (${r.what})`,
    );
  if (r.exit.code !== 0) {
    const how = r.exit.signal ? `was killed by ${r.exit.signal}` : `exited ${r.exit.code}`;
    return new UserInputError(
      'COMMAND_FAILED',
      `workload.run.cmd ${how} after ${(r.wall_ms / 1000).toFixed(1)} s (${r.what}); last output:\n${r.out.last()}`,
    );
  }
  return null;
}

/**
 * The directory the command runs in, named as the spec gave it: a missing one would otherwise
 * surface as `spawn /bin/sh ENOENT`. A relative run.cwd is only known here (orch validate checks
 * an absolute one).
 */
function checkCwd(given: string | undefined, cwd: string, base: string): void {
  let isDir = false;
  try {
    isDir = statSync(cwd).isDirectory();
  } catch {
    isDir = false;
  }
  if (isDir) return;
  const how =
    given === undefined
      ? ''
      : isAbsolute(given)
        ? ` (workload.run.cwd "${given}")`
        : ` (workload.run.cwd "${given}" is relative, resolved against ${base})`;
  throw new UserInputError(
    'COMMAND_CWD_MISSING',
    `workload.run.cwd: the directory ${cwd} does not exist on this worker${how}`,
    {
      hint: 'create it on the worker host, or make workload.run.cwd an absolute path, which orch validate checks',
    },
  );
}
