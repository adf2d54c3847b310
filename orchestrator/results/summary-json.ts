/**
 * The text of summary.json, parsed with its zod definition (summary-schema.ts) before it is
 * written, in every run and not only in tests, as report.json is (orchestrator/report/render-json.ts):
 * a record that does not match what docs/schemas/summary.schema.json promises fails where it is
 * made, naming the fields, not in a reader's validator.
 */
import { type SummaryJson, SummaryJsonSchema } from './summary-schema.ts';

export function renderSummaryJson(summary: SummaryJson): string {
  const text = `${JSON.stringify(summary, null, 2)}\n`;
  const parsed = SummaryJsonSchema.safeParse(JSON.parse(text));
  if (!parsed.success) {
    const where = parsed.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new Error(
      `summary.json of ${summary.experiment} does not match its schema (docs/schemas/summary.schema.json): ${where.join('; ')}`,
      { cause: parsed.error },
    );
  }
  return text;
}
