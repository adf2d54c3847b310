// Runs every test file under test/ (and native/'s ctest when the native build exists) with
// node's test runner. Node 20's --test does not expand globs, so the files are listed here.
// Usage: node scripts/run-tests.mjs [substring filter...]

import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { failuresOf } from './tap-failures.mjs';

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
// Every `orch` a test starts runs the CLI compiled from the files as they are: dist/ is compiled
// here first (scripts/build-cli.mjs, a second or two), and bin/orch.mjs runs it only while no source
// is newer (bin/dist-state.mjs), else the sources. An orch started from dist/ took 0.7 s of CPU
// against 1.5 s through tsx here, and the tests start hundreds (ORCH_FROM_SOURCE=1 in the
// environment still forces the sources). test/chaos/ runs at its reduced size unless CHAOS_SIZE says
// otherwise (npm run chaos: full).
const built = spawnSync(process.execPath, ['scripts/build-cli.mjs'], { stdio: 'inherit' });
if (built.status !== 0) {
  console.error('the CLI did not compile (node scripts/build-cli.mjs): the tests would run another orch');
  process.exit(1);
}
const testEnv = { ...process.env, CHAOS_SIZE: process.env.CHAOS_SIZE ?? 'ci' };
// test/e2e/ builds graphrt and runs a whole experiment on a fresh clone, the mutation check
// (test/chaos/mutants.test.ts) runs a scenario per mutant in scratch worktrees, and
// test/native/ctest.test.ts builds graphrt's test programs before it runs them: minutes on a
// loaded 2-core machine (the mutation check took 8 on one), so their files get a longer limit than
// the 5 minutes of the others.
// --test-force-exit: a file whose tests all ended exits even if a handle it leaked (a timer, a socket) would
// keep it alive, rather than wait out its limit. A leak is still a bug: run the file alone without the flag
// (node --import tsx --test --test-reporter=spec FILE) to see it (test/orchestrator/dispatcher-close.test.ts).
const testArgs = (list, timeoutMs) => [
  '--import',
  'tsx',
  '--test',
  '--test-force-exit',
  '--test-concurrency=1',
  `--test-timeout=${timeoutMs}`,
  ...list,
];
// ctest rebuilds native/build (GRAPHRT_TESTS=ON), which the other files run graphrt from: it runs
// after them, never beside them.
const CTEST = join('test', 'native', 'ctest.test.ts');
// Besides those, files that spend most of their time compiling into directories of their own (never
// native/build, which ctest rebuilds while this lane may still run) and measure nothing, so a core
// given to them only when the others leave it idle changes no result: liborch_inject.so built
// without a GPU, examples/cuda-tp built with nvcc.
const BUILD_BOUND = [join('test', 'native', 'inject.test.ts'), join('test', 'ranklib', 'cuda-tp-build.test.ts')];
const long = files.filter(
  (f) => f.startsWith(join('test', 'e2e')) || f === join('test', 'chaos', 'mutants.test.ts') || BUILD_BOUND.includes(f),
);
const rest = files.filter((f) => !long.includes(f) && f !== CTEST);
const ctest = files.filter((f) => f === CTEST);

/** The exit status of node's test runner over `list` and its TAP, which goes to our stdout as it comes. */
function runInline(list, timeoutMs) {
  if (list.length === 0) return Promise.resolve({ status: 0, tap: '' });
  const child = spawn(process.execPath, testArgs(list, timeoutMs), {
    stdio: ['inherit', 'pipe', 'inherit'],
    env: testEnv,
  });
  const chunks = [];
  child.stdout.on('data', (chunk) => {
    process.stdout.write(chunk);
    chunks.push(chunk);
  });
  return new Promise((done) =>
    child.on('close', (code) => done({ status: code ?? 1, tap: Buffer.concat(chunks).toString('utf8') })),
  );
}

/**
 * The long files run beside the others, at the lowest CPU priority (nice 19): they are minutes of
 * mostly waiting (builds, a scenario per mutant), and the other files' own waits leave the cores
 * idle most of the time, so together they end about when the others would have alone. At nice 19
 * they take a core only when no other test wants it, so the timing of the others is as it was.
 * Their TAP is kept in a file and printed after the others', not interleaved with it.
 */
function runNiced(list, timeoutMs) {
  if (list.length === 0) return Promise.resolve({ status: 0, tap: '' });
  const dir = mkdtempSync(join(tmpdir(), 'orch-long-tests-'));
  const out = openSync(join(dir, 'tap'), 'w');
  const niceBin = ['/usr/bin/nice', '/bin/nice'].find((f) => existsSync(f));
  const [cmd, args] = niceBin
    ? [niceBin, ['-n', '19', process.execPath, ...testArgs(list, timeoutMs)]]
    : [process.execPath, testArgs(list, timeoutMs)];
  const child = spawn(cmd, args, { stdio: ['ignore', out, out], env: testEnv });
  return new Promise((done) =>
    child.on('close', (code) => {
      closeSync(out);
      const tap = readFileSync(join(dir, 'tap'), 'utf8');
      rmSync(dir, { recursive: true, force: true });
      done({ status: code ?? 1, tap });
    }),
  );
}

const started = Date.now();
const serial = async () => {
  const first = await runInline(rest, 300_000);
  return [first, await runInline(ctest, 900_000)];
};
const [serialRuns, longRun] = await Promise.all([serial(), runNiced(long, 1_800_000)]);
process.stdout.write(`\n# the long files (${long.join(', ')}), run beside the others at nice 19:\n${longRun.tap}`);
const runs = [...serialRuns, longRun];
const failures = runs.flatMap((run) => failuresOf(run.tap));
if (failures.length > 0) console.log(`# what failed, again:\n${failures.map((line) => `# ${line}`).join('\n')}`);
else if (runs.some((run) => run.status !== 0))
  console.log('# a test run failed without a failing test in its TAP: its output above says why');
console.log(`# npm test: ${((Date.now() - started) / 1000).toFixed(0)} s`);
const status = runs.map((run) => run.status);
process.exit(status.find((s) => s !== 0) ?? 0);
