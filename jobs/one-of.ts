/**
 * Whether `value` is one of `choices`, narrowing it to their type: the check a closed list of words
 * (outcomes, toggle spellings, throttle reasons) makes of a string read from outside, in place of
 * `(choices as readonly string[]).includes(value)` and a cast after it.
 */
export function isOneOf<T extends string>(choices: readonly T[], value: string): value is T {
  return (choices as readonly string[]).includes(value);
}
