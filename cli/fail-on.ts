/**
 * `--fail-on`, the same on `orch submit`, `orch report`, `orch watch` and `orch nightly run`:
 * which outcomes fail the command (orchestrator/report/outcome-exit-code.ts). Repeatable or a
 * comma list (`--fail-on slower --fail-on invalid`, `--fail-on slower,invalid`); `none` lets every
 * outcome a CI may choose pass. A value outside the choices is refused with them.
 */
import type { Argv } from 'yargs';
import { UserInputError } from '../jobs/errors.ts';
import { isOneOf } from '../jobs/one-of.ts';
import {
  DEFAULT_FAIL_ON,
  FAIL_ON_CHOICES,
  type FailOn,
  type FailOnSet,
} from '../orchestrator/report/outcome-exit-code.ts';

export function withFailOn<T>(y: Argv<T>) {
  return y.option('fail-on', {
    type: 'string',
    array: true,
    default: [...DEFAULT_FAIL_ON],
    describe: `outcomes that exit non-zero: ${FAIL_ON_CHOICES.join('|')}|none, repeatable or comma-separated (default: ${DEFAULT_FAIL_ON.join(',')}; the others exit 0; cancelled and failed always fail)`,
  });
}

export function parseFailOn(values: readonly string[]): FailOnSet {
  const words = values
    .flatMap((v) => v.split(','))
    .map((w) => w.trim().toLowerCase())
    .filter((w) => w !== '');
  const bad = words.filter((w) => w !== 'none' && !isOneOf(FAIL_ON_CHOICES, w));
  if (bad.length > 0) {
    throw new UserInputError(
      'CLI_USAGE',
      `--fail-on: unknown outcome${bad.length > 1 ? 's' : ''} ${bad.map((b) => `"${b}"`).join(', ')}`,
      {
        hint: `choose from ${FAIL_ON_CHOICES.join(', ')} (or none), e.g. --fail-on slower,invalid`,
      },
    );
  }
  if (words.includes('none') && words.length > 1) {
    throw new UserInputError(
      'CLI_USAGE',
      `--fail-on none cannot be combined with ${words.filter((w) => w !== 'none').join(', ')}`,
      { hint: 'give either none or the outcomes that fail' },
    );
  }
  return new Set(words.filter((w): w is FailOn => w !== 'none'));
}
