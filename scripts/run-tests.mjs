// Runs every test file under test/ (and native/'s ctest when the native build exists) with
// node's test runner. Node 20's --test does not expand globs, so the files are listed here.
// Usage: node scripts/run-tests.mjs [substring filter...]

import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    if (name === 'fixtures' || name === 'node_modules') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = walk('test')
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${JSON.stringify(filters)}`);
  process.exit(1);
}
// Every `orch` a test starts runs the TypeScript sources (bin/orch.mjs), not dist/: the tests
// check the files as they are, built or not; test/cli/build.test.ts checks the compiled CLI.
// test/chaos/ runs at its reduced size unless CHAOS_SIZE says otherwise (npm run chaos: full).
const testEnv = { ...process.env, ORCH_FROM_SOURCE: '1', CHAOS_SIZE: process.env.CHAOS_SIZE ?? 'ci' };
// test/e2e/ builds graphrt and runs a whole experiment on a fresh clone, the mutation check
// (test/chaos/mutants.test.ts) runs a scenario per mutant in scratch worktrees, and
// test/native/ctest.test.ts builds graphrt's test programs before it runs them: minutes on a
// loaded 2-core machine (the mutation check took 5 on one), so their files get a longer limit than
// the 5 minutes of the others.
// --test-force-exit: a file whose tests all ended exits even if a handle it leaked (a timer, a socket) would
// keep it alive, rather than wait out its limit. A leak is still a bug: run the file alone without the flag
// (node --import tsx --test --test-reporter=spec FILE) to see it (test/orchestrator/dispatcher-close.test.ts).
const run = (list, timeoutMs) =>
  list.length === 0
    ? 0
    : (spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '--test',
          '--test-force-exit',
          '--test-concurrency=1',
          `--test-timeout=${timeoutMs}`,
          ...list,
        ],
        { stdio: 'inherit', env: testEnv },
      ).status ?? 1);
const LONG_FILES = [join('test', 'chaos', 'mutants.test.ts'), join('test', 'native', 'ctest.test.ts')];
const long = files.filter((f) => f.startsWith(join('test', 'e2e')) || LONG_FILES.includes(f));
const status = [
  run(
    files.filter((f) => !long.includes(f)),
    300_000,
  ),
  run(long, 900_000),
];
process.exit(status.find((s) => s !== 0) ?? 0);
