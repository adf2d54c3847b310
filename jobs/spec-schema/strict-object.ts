import { z } from 'zod';
import { LIMITS, LIMITS_FILE } from '../limits.ts';
import { NAME_PATTERN } from '../name-patterns.ts';

/**
 * The keys each strict object accepts, recorded by the object that failed (zod's
 * `unrecognized_keys` issue names the unknown keys but not the known ones). zod passes the
 * caller's own object as the issue's input, so the lookup is by identity on the parsed data.
 */
const knownKeys = new WeakMap<object, readonly string[]>();

/** A `z.strictObject` (unknown keys are errors) that remembers its keys for did-you-mean. */
export function strictObject<S extends z.core.$ZodLooseShape>(shape: S) {
  const keys = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code === 'unrecognized_keys' && typeof issue.input === 'object' && issue.input !== null) {
        knownKeys.set(issue.input, keys);
      }
      return undefined;
    },
  });
}

/** The keys the strict object that parsed `value` accepts, if it reported unknown keys. */
export function knownKeysOf(value: unknown): readonly string[] {
  return typeof value === 'object' && value !== null ? (knownKeys.get(value) ?? []) : [];
}

/**
 * Names that become Redis keys and file names: an experiment id is the name plus 21 characters
 * and a results directory, so the name is bounded well below a file name's 255 bytes.
 */
export const NAME_MAX_LENGTH = LIMITS.orch.name_length.max;
export const NameSchema = z
  .string()
  .max(NAME_MAX_LENGTH, {
    error: `a name becomes part of file names (at most 255 bytes with the experiment id's suffix); shorten it (${LIMITS_FILE} orch.name_length)`,
  })
  .regex(NAME_PATTERN, {
    error: 'use only letters, digits, "_", "." and "-" (it becomes a Redis key and a file name)',
  });
