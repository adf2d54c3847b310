/**
 * A request toggle's string value that was meant as on or off. A rank reads a toggle as on only for
 * `true` and TOGGLE_ON_STRINGS (jobs/rank-protocol-constants.ts); every other string is a value of a
 * toggle with several values, and reads as off. So `GRAPH: tru` or `GRAPH: yes` (a string in YAML
 * 1.2, not a boolean) silently turned the graph arm eager, and an A/B measured eager against eager.
 * Refused here, before any GPU time: a near miss of true or false, one of YAML 1.1's boolean words,
 * and, for the toggle the identity gate captures with (on or off by definition), any word that is
 * neither on nor off.
 */
import { levenshtein } from './did-you-mean.ts';
import { isOneOf } from './one-of.ts';
import { TOGGLE_ON_STRINGS } from './rank-protocol-constants.ts';

/** Strings a rank reads as off that are plainly meant so. */
const OFF_WORDS = ['false', 'off'] as const;
/**
 * The boolean a string was probably meant as, when it looks like one (YAML 1.1's boolean words and
 * digits, which YAML 1.2 reads as strings; another case; a typo); undefined for a word of its own.
 */
function meantAs(word: string): boolean | undefined {
  const w = word.trim().toLowerCase();
  if (['yes', 'y', '1', 'enable', 'enabled', 'true', 'on'].includes(w)) return true;
  if (['no', 'n', '0', 'disable', 'disabled', 'false', 'off'].includes(w)) return false;
  // one edit from true or false, or its letters swapped ("ture", "flase")
  const sorted = (s: string) => [...s].sort().join('');
  if (levenshtein(w, 'true') <= 1 || sorted(w) === sorted('true')) return true;
  if (levenshtein(w, 'false') <= 1 || sorted(w) === sorted('false')) return false;
  return undefined;
}

/**
 * The problem with a request toggle's string value, or undefined: `onOff` when the toggle is on or
 * off by definition (the identity gate's).
 */
export function toggleWordProblem(
  toggle: string,
  value: string,
  onOff: boolean,
): { message: string; fix: string } | undefined {
  if (isOneOf(TOGGLE_ON_STRINGS, value) || isOneOf(OFF_WORDS, value)) return undefined;
  const meant = meantAs(value);
  const reads = `reads as off (a rank reads only true, ${TOGGLE_ON_STRINGS.map((s) => `"${s}"`).join(' and ')} as on)`;
  if (meant !== undefined)
    return {
      message: `toggle "${toggle}" is the string ${JSON.stringify(value)}, which ${reads}`,
      fix: `did you mean ${meant}? write ${meant} (unquoted)`,
    };
  if (onOff)
    return {
      message: `toggle "${toggle}" turns capture on for the identity gate, so it is on or off; the string ${JSON.stringify(value)} ${reads}`,
      fix: 'use true or false',
    };
  return undefined;
}
