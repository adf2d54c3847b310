/**
 * The one place that turns a command workload + an arm into what runs: the shell command line
 * (run.cmd plus each argument toggle's value, shell-quoted) and the environment (run.env, each
 * env toggle's on/off value, and the ORCH_* variables the command may read). The command
 * workload's counterpart of jobs/native-args.ts.
 *
 * Variables given to the command:
 *   ORCH_ARTIFACTS    the build's artifact dir (artifacts at their relative paths)
 *   ORCH_WARMUP       workload.warmup
 *   ORCH_STEPS        workload.steps (measured)
 *   ORCH_TOTAL_STEPS  max(warmup, 1) + steps: run steps 0..TOTAL-1 and exactly `steps` are measured
 *   ORCH_ARM          the arm's name
 */
import { UserInputError } from '../../jobs/errors.ts';
import { toggleIsOn } from '../../jobs/rank-protocol-constants.ts';

export type ToggleMappingInput =
  | { env: string; on: string; off: string }
  | { arg_on: string; arg_off: string }
  | 'request';

export interface CommandRunInput {
  cmd: string;
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
}

export interface CommandInvocation {
  /** A /bin/sh command line. */
  cmd: string;
  /** Variables set on top of the worker's environment. */
  env: Record<string, string>;
}

export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_\-./=:,@%+]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export function toCommandInvocation(
  workload: { run: CommandRunInput; toggles: Record<string, ToggleMappingInput>; warmup: number; steps: number },
  arm: { name: string; toggles: Record<string, boolean | string> },
  artifactDir: string | null,
): CommandInvocation {
  const env: Record<string, string> = {
    ...(workload.run.env ?? {}),
    ORCH_WARMUP: String(workload.warmup),
    ORCH_STEPS: String(workload.steps),
    ORCH_TOTAL_STEPS: String(Math.max(workload.warmup, 1) + workload.steps),
    ORCH_ARM: arm.name,
  };
  if (artifactDir !== null) env.ORCH_ARTIFACTS = artifactDir;
  const args: string[] = [];
  for (const [name, value] of Object.entries(arm.toggles)) {
    const mapping = workload.toggles[name];
    if (!mapping) {
      throw new UserInputError(
        'TOGGLE_UNMAPPED',
        `workload.toggles: arm "${arm.name}" sets toggle "${name}" but workload.toggles has no mapping for it (mapped: ${Object.keys(workload.toggles).join(', ') || 'none'})`,
        {
          hint: `add workload.toggles.${name}: { env: SOME_VAR, on: "1", off: "0" }`,
        },
      );
    }
    if (mapping === 'request') {
      throw new UserInputError(
        'TOGGLE_UNMAPPED',
        `workload.toggles.${name}: a request toggle reaches only a resident rank, and this command runs once per rep`,
        { hint: 'set workload.run.mode: resident, or map the toggle to an env var or arguments' },
      );
    }
    const on = toggleIsOn(value);
    if ('env' in mapping) env[mapping.env] = on ? mapping.on : mapping.off;
    else {
      // "--graph --pdl" is two arguments; each is quoted on its own.
      args.push(...(on ? mapping.arg_on : mapping.arg_off).split(/\s+/).filter((a) => a !== ''));
    }
  }
  return { cmd: [workload.run.cmd, ...args.map(shellQuote)].join(' '), env };
}
