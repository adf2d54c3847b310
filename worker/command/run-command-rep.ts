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
import { MetricParser, selectMeasured, type MetricSample, type MetricSourceInput } from '../../jobs/metric-source.ts';
import { toCommandInvocation, type CommandRunInput, type ToggleMappingInput } from './command-invocation.ts';
import { readLines } from '../line-reader.ts';
import { MetricRegexThread, type RegexGroups } from './metric-regex-thread.ts';
import { spawnTethered } from './tether.ts';
import { programEnv } from './program-env.ts';

/** flock(1)'s exit code when the card lock is taken (-E); above every 128+signal status. */
export const CARD_BUSY_EXIT = 199;
const TAIL_LINES = 15;

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

export async function runCommandRep(input: CommandRepInput): Promise<CommandRepResult> {
  const { workload, arm } = input;
  const inv = toCommandInvocation(workload, arm, input.artifactDir);
  const base = input.baseDir ?? input.artifactDir ?? process.cwd();
  const cwd = workload.run.cwd === undefined ? base : isAbsolute(workload.run.cwd) ? workload.run.cwd : resolve(base, workload.run.cwd);
  checkCwd(workload.run.cwd, cwd, input.baseDir ?? (input.artifactDir !== null ? "the build's artifact dir" : "the worker's cwd"));
  const parser = new MetricParser(workload.metric_source);
  const started = Date.now();
  const p = spawnTethered('flock', ['-n', '-o', '-E', String(CARD_BUSY_EXIT), input.cardLock, '/bin/sh', '-c', inv.cmd], {
    cwd,
    env: programEnv({ ...inv.env, ...input.env }),
  });
  if (p.child.pid !== undefined) input.onStart?.(p.child.pid);
  const tail: string[] = [];
  const samples: MetricSample[] = [];
  let parseError: unknown = null;
  let timedOut = false;
  const keep = (stream: 'stdout' | 'stderr', line: string) => {
    tail.push(stream === 'stderr' ? `[stderr] ${line}` : line);
    if (tail.length > TAIL_LINES) tail.shift();
    input.onLine?.(stream, line);
  };
  const failParse = (err: unknown) => {
    if (parseError) return;
    parseError = err;
    p.killGroup();
  };
  // the user's regex runs off this event loop, under a per-line time budget
  const regex = parser.pattern === null ? null : new MetricRegexThread(parser.pattern, input.regexBudgetMs);
  let matched: Promise<void> = Promise.resolve();
  readLines(p.child.stdout!, MAX_RANK_LINE_BYTES, {
    onLine: (line) => {
      keep('stdout', line);
      if (parseError) return;
      const take = (groups: RegexGroups) => {
        const s = parser.parseMatched(line, groups);
        if (s) samples.push(s);
      };
      if (regex === null) {
        try {
          take(null);
        } catch (err) {
          failParse(err);
        }
        return;
      }
      // matched in order: each line's answer is taken after the one before it
      const groups = regex.match(line);
      // after a failure every later line's match rejects too; the first one was already taken
      groups.catch(() => undefined);
      matched = matched.then(async () => {
        if (parseError) return;
        try {
          take(await groups);
        } catch (err) {
          failParse(err);
        }
      });
    },
    onTooLong: (head) => {
      keep('stdout', `${head}…`);
      if (parseError) return;
      parseError = new UserInputError('RANK_LINE_TOO_LONG', `workload.run.cmd printed a stdout line longer than ${MAX_RANK_LINE_LABEL}; killed (arm "${arm.name}", command: ${inv.cmd}); it starts: ${head}`, {
        hint: 'print metric lines of sane length; send bulk output to a file',
      });
      p.killGroup();
    },
  });
  // stderr is only shown: an overlong line is kept by its head
  readLines(p.child.stderr!, MAX_RANK_LINE_BYTES, { onLine: (line) => keep('stderr', line), onTooLong: (head) => keep('stderr', `${head}… (longer than ${MAX_RANK_LINE_LABEL})`) });
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
    // the last lines' matches (each bounded by the regex budget)
    await matched;
  } finally {
    clearTimeout(timer);
    input.signal?.removeEventListener('abort', onAbort);
    await regex?.close();
  }
  const wall_ms = Date.now() - started;
  const last = () => tail.map((l) => `  | ${l}`).join('\n') || '  | (no output)';
  const what = `arm "${arm.name}", command: ${inv.cmd}`;
  if (parseError) throw parseError;
  if (input.signal?.aborted) {
    const why = input.signal.reason instanceof Error ? input.signal.reason.message : String(input.signal.reason);
    throw new OrchError('COMMAND_ABORTED', `workload.run.cmd: killed (${why}) (${what})`, { cause: input.signal.reason });
  }
  if (timedOut) {
    throw new UserInputError('COMMAND_TIMEOUT', `workload.run.cmd: no exit after workload.run.timeout_s = ${workload.run.timeout_s} s, killed (${what}); last output:\n${last()}`);
  }
  if (exit.code === CARD_BUSY_EXIT) {
    throw new OrchError('CARD_BUSY', `the card lock ${input.cardLock} is held by another process; refusing to run a second process on the card (${what})`);
  }
  if (exit.code !== 0) {
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited ${exit.code}`;
    throw new UserInputError('COMMAND_FAILED', `workload.run.cmd ${how} after ${(wall_ms / 1000).toFixed(1)} s (${what}); last output:\n${last()}`);
  }
  const m = selectMeasured(samples, { warmup: workload.warmup, steps: workload.steps, describe: what, tail: last() });
  return { arm: arm.name, step_ms: m.values, steps: m.steps, excluded: m.excluded, metric_lines: samples.length, wall_ms, pid: p.child.pid! };
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
  const how = given === undefined ? '' : isAbsolute(given) ? ` (workload.run.cwd "${given}")` : ` (workload.run.cwd "${given}" is relative, resolved against ${base})`;
  throw new UserInputError('COMMAND_CWD_MISSING', `workload.run.cwd: the directory ${cwd} does not exist on this worker${how}`, {
    hint: 'create it on the worker host, or make workload.run.cwd an absolute path, which orch validate checks',
  });
}
