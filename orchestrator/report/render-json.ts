/**
 * The machine report: the whole Analysis plus its exit code under the default --fail-on, as stable pretty JSON. `version`
 * changes when a field changes meaning. Non-finite numbers cannot occur in an Analysis
 * (types.ts); the replacer turns any that slipped through into null so the file stays JSON.
 *
 * Every report.json is parsed with its zod definition (orchestrator/stats/analysis-schema.ts)
 * before it is returned, in every run and not only in tests: the compiler already keeps the
 * Analysis type and the schema equal (analysis-schema-check.ts), so what fails here is a value
 * the types cannot see (a NaN written as null where the schema allows no null, an empty throttle
 * list), a bug that would otherwise surface in a reader's validator, far from its cause. One parse
 * of one report costs milliseconds.
 */
import { ReportJsonSchema } from '../stats/analysis-schema.ts';
import type { Analysis } from '../stats/types.ts';
import { outcomeExitCode } from './outcome-exit-code.ts';

export const REPORT_JSON_VERSION = 1;

export function renderJson(a: Analysis): string {
  const doc = { version: REPORT_JSON_VERSION, exit_code: outcomeExitCode(a), ...a };
  const text = `${JSON.stringify(doc, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`;
  const parsed = ReportJsonSchema.safeParse(JSON.parse(text));
  if (!parsed.success) {
    const where = parsed.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new Error(
      `report.json of ${a.experiment} does not match its schema (docs/schemas/report.schema.json): ${where.join('; ')}`,
      { cause: parsed.error },
    );
  }
  return text;
}
