// Runs the benchmarks under bench/ (each a script printing its own table), one after another.
// Usage: npm run bench [-- substring filter...]   e.g. npm run bench -- cli-start

import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

const filters = process.argv.slice(2);
const files = readdirSync('bench')
  .filter((f) => f.endsWith('.ts') && (filters.length === 0 || filters.some((s) => f.includes(s))))
  .sort();
if (files.length === 0) {
  console.error(`no bench/ file matches ${JSON.stringify(filters)}`);
  process.exit(1);
}
let failed = 0;
for (const f of files) {
  console.log(`== bench/${f}`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', `bench/${f}`], { stdio: 'inherit' });
  if (r.status !== 0) failed += 1;
}
process.exit(failed === 0 ? 0 : 1);
