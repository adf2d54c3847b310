/**
 * `npm run gen:schemas`: writes docs/schemas/report.schema.json from its zod definition
 * (orchestrator/stats/analysis-schema.ts); `--check` writes nothing and exits 1 when it is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPORT_SCHEMA_PATH, renderReportSchema } from '../orchestrator/stats/analysis-schema.ts';

const root = join(import.meta.dirname, '..');
const check = process.argv.includes('--check');
const path = join(root, REPORT_SCHEMA_PATH);
let now = '';
try {
  now = readFileSync(path, 'utf8');
} catch {
  // absent: stale
}
const text = renderReportSchema();
if (now === text) {
  console.log('schema files up to date');
} else if (check) {
  console.error(`stale generated schema (run npm run gen:schemas): ${REPORT_SCHEMA_PATH}`);
  process.exit(1);
} else {
  writeFileSync(path, text);
  console.log(`wrote ${REPORT_SCHEMA_PATH}`);
}
