/**
 * orch's own provenance says when the tree it runs from is not its commit: a tree copied over an
 * older .git (what the GPU host of bench/h200 gets) reported the old commit as what ran.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { gitCommit, gitDirty } from '../../orchestrator/report/orch-provenance.ts';
import type { Provenance } from '../../orchestrator/report/provenance.ts';
import { renderProvenance } from '../../orchestrator/report/render-provenance.ts';

test('gitDirty: tracked changes are dirty, untracked files are not, no repository is unknown', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-prov-'));
  assert.equal(gitDirty(dir), null);
  const git = (...a: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.email=t@orch', '-c', 'user.name=t', ...a], { stdio: 'ignore' });
  git('init', '-q');
  writeFileSync(join(dir, 'a.txt'), 'one\n');
  git('add', 'a.txt');
  git('commit', '-qm', 'one');
  assert.match(gitCommit(dir) ?? '', /^[0-9a-f]{40}$/);
  assert.equal(gitDirty(dir), false);
  writeFileSync(join(dir, 'b.txt'), 'untracked\n');
  assert.equal(gitDirty(dir), false, 'an untracked file is not part of what the commit names');
  writeFileSync(join(dir, 'a.txt'), 'two\n');
  assert.equal(gitDirty(dir), true);
});

test('the header names a dirty orch, and renders results written before dirty was recorded as before', () => {
  const base: Provenance = {
    orch: { version: '0.1.0', commit: 'c0ffee' },
    spec_hash: 'h',
    workload_hash: 'w',
    created: '2026-11-30T00:00:00.000Z',
    ended: null,
    builds: [],
    graphrt: [],
    hosts: [],
    cards: [],
    throttle: { reasons: {}, reps: [] },
  };
  const line = (orch: Provenance['orch']) => renderProvenance({ provenance: { ...base, orch } })[0] as string;
  assert.match(
    line({ version: '0.1.0', commit: 'c0ffee', dirty: true }),
    /\(commit c0ffee, with uncommitted changes to tracked files\)/,
  );
  assert.match(line({ version: '0.1.0', commit: 'c0ffee', dirty: false }), /\(commit c0ffee\);/);
  assert.equal(
    line({ version: '0.1.0', commit: 'c0ffee' }),
    line({ version: '0.1.0', commit: 'c0ffee', dirty: false }),
  );
});
