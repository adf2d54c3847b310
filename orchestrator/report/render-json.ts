/**
 * The machine report: the whole Analysis plus its exit code under the default --fail-on, as stable pretty JSON. `version`
 * changes when a field changes meaning. Non-finite numbers cannot occur in an Analysis
 * (types.ts); the replacer turns any that slipped through into null so the file stays JSON.
 */
import type { Analysis } from '../stats/types.ts';
import { outcomeExitCode } from './outcome-exit-code.ts';

export const REPORT_JSON_VERSION = 1;

export function renderJson(a: Analysis): string {
  const doc = { version: REPORT_JSON_VERSION, exit_code: outcomeExitCode(a), ...a };
  return `${JSON.stringify(doc, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`;
}
