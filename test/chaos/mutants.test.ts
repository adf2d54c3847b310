/**
 * The mutation check inside `npm test` (scripts/mutation-check.mjs; `npm run mutants` runs every
 * mutant): each patch of test/mutants/ removes one fix from a scratch worktree of HEAD, and the
 * chaos scenario or test file it names must fail on it. A mutant that survives is a scenario
 * that cannot fail. MUTANTS_CI (comma-separated name substrings) picks the mutants run here;
 * by default all of them, each scenario at the ci size.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

const picked = (process.env.MUTANTS_CI ?? '').split(',').filter(Boolean);
const inGit = spawnSync('git', ['rev-parse', '--verify', 'HEAD'], { encoding: 'utf8' }).status === 0;

test('every mutant of test/mutants is killed by its scenario', {
  skip: !inGit && 'not a git checkout: no HEAD to make a scratch worktree of',
  // scripts/run-tests.mjs runs this file at nice 19 beside the others: minutes longer than alone
  timeout: 1_500_000,
}, () => {
  const r = spawnSync(process.execPath, ['scripts/mutation-check.mjs', ...picked], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const table = r.stdout.trim();
  console.log(`\n${table}\n`);
  const rows = table.split('\n').slice(2);
  assert.ok(rows.length > 0, `the mutation check printed no row: ${r.stderr.slice(-2000)}`);
  const alive = rows.filter((l) => !l.includes('| killed |'));
  assert.deepEqual(alive, [], 'mutants that survived (a scenario that cannot fail) or no longer apply');
  assert.equal(r.status, 0, r.stderr.slice(-2000));
});
