/**
 * `npm run gen:protocol`: writes every file generated from the rank protocol's description
 * (jobs/rank-protocol-render.ts); `--check` writes nothing and exits 1 naming the stale ones.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  GENERATED_PATHS,
  renderNativeHeader,
  renderProtocolJson,
  renderPython,
  withCppSection,
} from '../jobs/rank-protocol-render.ts';

const root = join(import.meta.dirname, '..');
const check = process.argv.includes('--check');
const wanted: Array<[string, string]> = [
  [GENERATED_PATHS.json, renderProtocolJson()],
  [GENERATED_PATHS.python, renderPython()],
  [GENERATED_PATHS.cpp, withCppSection(readFileSync(join(root, GENERATED_PATHS.cpp), 'utf8'))],
  [GENERATED_PATHS.native, renderNativeHeader()],
];
const stale: string[] = [];
for (const [path, text] of wanted) {
  let now = '';
  try {
    now = readFileSync(join(root, path), 'utf8');
  } catch {
    // absent: stale
  }
  if (now === text) continue;
  stale.push(path);
  if (!check) writeFileSync(join(root, path), text);
}
if (check && stale.length > 0) {
  console.error(`stale generated protocol files (run npm run gen:protocol): ${stale.join(', ')}`);
  process.exit(1);
}
console.log(stale.length === 0 ? 'protocol files up to date' : `wrote ${stale.join(', ')}`);
