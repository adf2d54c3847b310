// The mutation check: every patch in test/mutants/ removes one fix; each scenario it names must
// fail on it. A patch starts with header lines, then the diff (git apply skips the header):
//   mutant: <what the patch breaks>
//   scenario: chaos <CHAOS_ONLY substring>   |   scenario: test <test file>   (one or more)
// Each mutant is applied to a scratch `git worktree` of HEAD (node_modules linked, native/build
// copied: the graphrt scenarios run it), each of its scenarios is run at the ci size, and the
// result is a markdown table: mutant | scenario | killed or survived | the failure that killed it.
// Exit 1 when any scenario let its mutant survive, or a patch no longer applies to HEAD (a mutant
// of code that moved).
// Usage: node scripts/mutation-check.mjs [--rev COMMIT] [name substring...]   (npm run mutants)
//   --rev: the tree to mutate and test (default HEAD): an older commit shows which mutants its
//   scenarios let survive.

import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(new URL('..', import.meta.url).pathname);
const dir = join(root, 'test/mutants');
const argv = process.argv.slice(2);
const revAt = argv.indexOf('--rev');
const rev = revAt >= 0 ? argv[revAt + 1] : 'HEAD';
if (rev === undefined) {
  console.error('--rev needs a commit');
  process.exit(2);
}
const filters = argv.filter((_, i) => revAt < 0 || (i !== revAt && i !== revAt + 1));
const mutants = readdirSync(dir)
  .filter((f) => f.endsWith('.patch'))
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort()
  .map((f) => {
    const text = readFileSync(join(dir, f), 'utf8');
    const what = /^mutant: (.+)$/m.exec(text)?.[1];
    const scenarios = [...text.matchAll(/^scenario: (chaos|test) (.+)$/gm)].map((m) => ({
      kind: m[1],
      target: m[2].trim(),
    }));
    if (!what || scenarios.length === 0)
      throw new Error(
        `test/mutants/${f}: the header needs "mutant: ..." and "scenario: chaos <substring>" or "scenario: test <file>" lines before the diff`,
      );
    return { name: f.replace(/\.patch$/, ''), file: join(dir, f), what, scenarios };
  });
if (mutants.length === 0) {
  console.error(`no mutant in test/mutants matches ${JSON.stringify(filters)}`);
  process.exit(1);
}

const git = (args, cwd = root) => spawnSync('git', args, { cwd, encoding: 'utf8' });
const scratch = mkdtempSync(join(tmpdir(), 'orch-mutants-'));
const tree = join(scratch, 'tree');
const added = git(['worktree', 'add', '--detach', tree, rev]);
if (added.status !== 0) {
  console.error(`git worktree add failed: ${added.stderr.trim()}`);
  process.exit(1);
}
symlinkSync(realpathSync(join(root, 'node_modules')), join(tree, 'node_modules'));
if (existsSync(join(root, 'native/build')))
  cpSync(join(root, 'native/build'), join(tree, 'native/build'), { recursive: true });

/** The first failure node's test runner printed (TAP `error:`, or the line after a `|-` block), as the table's reason. */
function firstFailure(out) {
  const m = /^\s*error: (.+)\n(.*)$/m.exec(out);
  const text = m === null ? (out.trim().split('\n').at(-1) ?? '') : /^[|>]-?$/.test(m[1].trim()) ? m[2] : m[1];
  return text
    .trim()
    .replace(/^['"]|['"]$/g, '')
    .replace(/\|/g, '\\|')
    .slice(0, 160);
}

const rows = [];
try {
  for (const m of mutants) {
    for (const sc of m.scenarios) {
      git(['reset', '--hard', '--quiet', rev], tree);
      const applied = git(['apply', m.file], tree);
      const row = { ...m, ...sc };
      if (applied.status !== 0) {
        rows.push({ ...row, result: 'does not apply', why: applied.stderr.trim().split('\n')[0] ?? '', s: 0 });
        continue;
      }
      const t0 = Date.now();
      const file = sc.kind === 'chaos' ? 'test/chaos/chaos.test.ts' : sc.target;
      const env = {
        ...process.env,
        ORCH_FROM_SOURCE: '1',
        CHAOS_SIZE: 'ci',
        ...(sc.kind === 'chaos' ? { CHAOS_ONLY: sc.target } : {}),
      };
      // run from node's test runner (test/chaos/mutants.test.ts), the child would report to it, not print TAP
      delete env.NODE_TEST_CONTEXT;
      const r = spawnSync(
        process.execPath,
        ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-timeout=300000', file],
        { cwd: tree, env, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
      );
      const out = `${r.stdout}\n${r.stderr}`;
      // a scenario that never ran (a filter matching nothing, a skip) proves nothing: that is no kill
      const ran = /^# tests [1-9]/m.test(out) && !/^# skipped [1-9]/m.test(out);
      const result = !ran ? 'no scenario ran' : r.status === 0 ? 'survived' : 'killed';
      const s = (Date.now() - t0) / 1000;
      rows.push({ ...row, result, why: result === 'killed' ? firstFailure(out) : '', s });
      console.error(`# mutant ${m.name} / ${sc.kind} ${sc.target}: ${result} (${s.toFixed(0)} s)`);
    }
  }
} finally {
  git(['worktree', 'remove', '--force', tree]);
  rmSync(scratch, { recursive: true, force: true });
}

console.log('| mutant | scenario | result | killed by | s |\n| --- | --- | --- | --- | --- |');
for (const r of rows)
  console.log(`| ${r.name}: ${r.what} | ${r.kind} ${r.target} | ${r.result} | ${r.why} | ${r.s.toFixed(0)} |`);
process.exit(rows.every((r) => r.result === 'killed') ? 0 : 1);
