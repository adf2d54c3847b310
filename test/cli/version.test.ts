// `orch --version`: package.json's version and the commit of the checkout (read from .git
// without git), `unknown` outside a checkout.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { orchVersion } from '../../cli/version.ts';
import { runOrch } from './run-orch.ts';

describe('orch --version', () => {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

  it('prints the version and the commit git names for HEAD', () => {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    const r = runOrch(['--version']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `orch ${pkg.version} (commit ${head.slice(0, 12)})\n`);
    assert.deepEqual(orchVersion(), { version: pkg.version, commit: head });
  });

  it('says unknown without a checkout, and follows packed refs and a detached HEAD', () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-version-'));
    try {
      const root = `${dir}/`;
      cpSync('package.json', join(dir, 'package.json'));
      assert.deepEqual(orchVersion(root), { version: pkg.version, commit: 'unknown' });
      execFileSync('git', ['init', '-q', dir]);
      execFileSync('git', [
        '-C',
        dir,
        '-c',
        'user.name=t',
        '-c',
        'user.email=t@t',
        'commit',
        '-q',
        '--allow-empty',
        '-m',
        'x',
      ]);
      const head = execFileSync('git', ['-C', dir, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
      assert.equal(orchVersion(root).commit, head);
      execFileSync('git', ['-C', dir, 'pack-refs', '--all']);
      assert.equal(orchVersion(root).commit, head, 'packed-refs');
      execFileSync('git', ['-C', dir, 'checkout', '-q', '--detach']);
      assert.equal(orchVersion(root).commit, head, 'detached');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
