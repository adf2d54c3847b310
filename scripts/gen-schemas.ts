/**
 * `npm run gen:schemas`: writes docs/schemas/report.schema.json from its zod definition
 * (orchestrator/stats/analysis-schema.ts), laid out by the repository's formatter (biome.jsonc) so
 * `npm run lint` finds nothing to change in it; `--check` writes nothing and exits 1 when its
 * content is stale (the layout is the formatter's business, the content this script's).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { REPORT_SCHEMA_PATH, renderReportSchema, reportJsonSchema } from '../orchestrator/stats/analysis-schema.ts';

const root = join(import.meta.dirname, '..');
const check = process.argv.includes('--check');
const path = join(root, REPORT_SCHEMA_PATH);
let now: unknown = null;
try {
  now = JSON.parse(readFileSync(path, 'utf8'));
} catch {
  // absent or not JSON: stale
}
if (isDeepStrictEqual(now, reportJsonSchema())) {
  console.log('schema files up to date');
} else if (check) {
  console.error(`stale generated schema (run npm run gen:schemas): ${REPORT_SCHEMA_PATH}`);
  process.exit(1);
} else {
  writeFileSync(path, renderReportSchema());
  execFileSync(join(root, 'node_modules/.bin/biome'), ['format', '--write', path], { cwd: root, stdio: 'ignore' });
  console.log(`wrote ${REPORT_SCHEMA_PATH}`);
}
