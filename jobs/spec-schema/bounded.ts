/**
 * Schema pieces bounded by native/limits.json (jobs/limits.ts): every number graphrt or the OS
 * would refuse, and every string that becomes a process argument, an environment entry or a
 * path, is refused by `orch validate` instead, with the reason as the fix.
 */
import { z } from 'zod';
import { LIMITS, LIMITS_FILE } from '../limits.ts';
import { ENV_NAME_PATTERN } from '../name-patterns.ts';

interface Range {
  min: number;
  max: number;
}

/** An integer in `range`; `why` says who refuses more (the fix a user reads). */
export function intIn(range: Range, why: string) {
  return z
    .int()
    .min(range.min)
    .max(range.max, { error: `${why}; use at most ${range.max} (${LIMITS_FILE})` });
}

const NO_NUL = {
  error: 'holds a NUL byte, which no process argument, environment value or path can carry; remove it',
} as const;

/** A string that reaches a process (argument, environment, path): no NUL, at most `max` characters. */
export function processString(max: number, why: string) {
  return z
    .string()
    .max(max, { error: `${why} (${LIMITS_FILE})` })
    .refine((s) => !s.includes('\0'), NO_NUL);
}

/** A list of at most `orch.list_length` items (the plan and every message about it stay small). */
export function boundedList<T extends z.ZodType>(item: T) {
  return z
    .array(item)
    .max(LIMITS.orch.list_length.max, { error: `more items than orch plans for (${LIMITS_FILE} orch.list_length)` });
}

/** Seconds a Node timer can wait: setTimeout's delay is a signed 32-bit count of milliseconds. */
export const TimeoutSchema = z
  .number()
  .positive()
  .max(LIMITS.orch.timeout_s.max, {
    error: `Node's setTimeout holds at most 2^31-1 ms (${LIMITS_FILE} orch.timeout_s)`,
  });

/** A file or directory path: within PATH_MAX, no NUL. */
export const PathSchema = processString(LIMITS.orch.path_length.max, 'a path is at most PATH_MAX bytes').pipe(
  z.string().min(1),
);

/** A shell command line: one argument of /bin/sh -c, far below the kernel's per-argument limit. */
export const CommandSchema = processString(
  LIMITS.orch.command_length.max,
  'the command is one argument of /bin/sh -c, whose length the kernel bounds',
).pipe(z.string().min(1));

export const EnvNameSchema = z
  .string()
  .max(LIMITS.orch.env.name_length, {
    error: `an environment name this long is not read back by programs (${LIMITS_FILE} orch.env.name_length)`,
  })
  .regex(ENV_NAME_PATTERN, {
    error: 'not an environment variable name: use letters, digits and "_", not starting with a digit',
  });

/** An environment variable's value: no NUL (execve ends it there), bounded. */
export const EnvValueSchema = processString(
  LIMITS.orch.env.value_length,
  "the whole environment shares the kernel's argument limit",
);

/** `run.env`: at most `orch.env.count` entries, every name and value as above. */
export const EnvSchema = z
  .record(EnvNameSchema, EnvValueSchema)
  .refine((env) => Object.keys(env).length <= LIMITS.orch.env.count, {
    error: `more than ${LIMITS.orch.env.count} variables: the whole environment shares the kernel's argument limit; move settings into a file the command reads`,
  });
