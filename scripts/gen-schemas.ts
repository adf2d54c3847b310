/**
 * `npm run gen:schemas`: writes docs/schemas/report.schema.json and summary.schema.json from their
 * zod definitions (orchestrator/stats/analysis-schema.ts, orchestrator/results/summary-schema.ts),
 * laid out by the repository's formatter (biome.jsonc) so `npm run lint` finds nothing to change in
 * them; `--check` writes nothing and exits 1 when the content of either is stale (the layout is the
 * formatter's business, the content this script's).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { SUMMARY_SCHEMA_PATH, summaryJsonSchema } from '../orchestrator/results/summary-schema.ts';
import { REPORT_SCHEMA_PATH, reportJsonSchema } from '../orchestrator/stats/analysis-schema.ts';

const root = join(import.meta.dirname, '..');
const check = process.argv.includes('--check');
const generated: [string, Record<string, unknown>][] = [
  [REPORT_SCHEMA_PATH, reportJsonSchema()],
  [SUMMARY_SCHEMA_PATH, summaryJsonSchema()],
];

/** The file's JSON, or null when it is absent or not JSON (stale either way). */
function shipped(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
}

const stale = generated.filter(([file, schema]) => !isDeepStrictEqual(shipped(join(root, file)), schema));
if (stale.length === 0) {
  console.log('schema files up to date');
} else if (check) {
  console.error(`stale generated schema (run npm run gen:schemas): ${stale.map(([file]) => file).join(', ')}`);
  process.exit(1);
} else {
  for (const [file, schema] of stale) {
    const path = join(root, file);
    writeFileSync(path, `${JSON.stringify(schema, null, 2)}\n`);
    execFileSync(join(root, 'node_modules/.bin/biome'), ['format', '--write', path], { cwd: root, stdio: 'ignore' });
    console.log(`wrote ${file}`);
  }
}
