/**
 * The rank caches' root and the directories above it: a program's compiler caches stay the
 * worker's own (0700), while the directories the first cache set had to make above them stay
 * passable (0755), as the build root's are. Before, one recursive mkdir with mode 0700 closed them
 * all: root's first embedded `orch submit` made /var/cache/orch 0700, and a root worker started
 * there later with --allow-command refused its run-as user ("the build cache /var/cache/orch/builds
 * lies under /var/cache/orch (mode 0700 ...), which orch-run cannot enter"; npm test, 2026-12-05).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { rankCaches, rankCachesRoot } from '../../worker/command/rank-caches.ts';

const top = mkdtempSync(join(tmpdir(), 'orch-rank-caches-root-'));
after(() => rmSync(top, { recursive: true, force: true }));
const mode = (p: string) => statSync(p).mode & 0o777;

test('the first cache set makes the directories above the rank caches passable and keeps the caches 0700', () => {
  const buildRoot = join(top, 'var', 'cache', 'orch', 'builds');
  const caches = rankCaches(buildRoot, null);
  assert.equal(mode(join(top, 'var')), 0o755);
  assert.equal(mode(join(top, 'var', 'cache')), 0o755);
  assert.equal(
    mode(join(top, 'var', 'cache', 'orch')),
    0o755,
    "the build root's parent: a run-as user passes through it",
  );
  assert.equal(mode(rankCachesRoot(buildRoot)), 0o700);
  assert.equal(mode(caches.dir), 0o700);
  assert.equal(mode(caches.env.TRITON_CACHE_DIR), 0o700);
});

test('directories that were there already keep their modes', () => {
  const mine = join(top, 'mine');
  mkdirSync(mine, { mode: 0o700 });
  rankCaches(join(mine, 'orch', 'builds'), 'k1');
  assert.equal(mode(mine), 0o700, "an operator's own closed directory is not opened");
  assert.equal(mode(join(mine, 'orch')), 0o755);
});
