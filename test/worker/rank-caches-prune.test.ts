/**
 * `orch prune --rank-caches`: on real directories, the compiler caches of a build no longer in the
 * build cache go, and so do caches (the checkout's too) unused for longer than --older-than; the
 * caches of a finished build used recently stay, and so does a directory that is no cache set.
 * A run-as user's cache sets (as root) are judged alike and removed as that user.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { COMPLETE_MARKER } from '../../worker/builds/build-cache.ts';
import { LAST_USED_FILE, rankCaches, rankCachesRoot } from '../../worker/command/rank-caches.ts';
import { resolveRunAs } from '../../worker/run-as.ts';
import { runOrch } from '../cli/run-orch.ts';

const DAY_MS = 86_400_000;

/** A finished build as the build cache leaves it: artifacts/<key>/ with its marker. */
function finishedBuild(buildRoot: string, key: string): void {
  mkdirSync(join(buildRoot, 'artifacts', key), { recursive: true });
  writeFileSync(join(buildRoot, 'artifacts', key, COMPLETE_MARKER), '');
}

/** A cache set whose last use was `daysAgo` days ago, with something compiled in it (warm). */
function usedCaches(buildRoot: string, key: string | null, daysAgo: number): string {
  const caches = rankCaches(buildRoot, key);
  writeFileSync(join(caches.env.TRITON_CACHE_DIR, 'kernel.cubin'), 'x');
  const then = new Date(Date.now() - daysAgo * DAY_MS);
  utimesSync(join(caches.dir, LAST_USED_FILE), then, then);
  return caches.dir;
}

describe('orch prune --rank-caches', () => {
  const top = mkdtempSync(join(tmpdir(), 'orch-rank-caches-'));
  after(() => rmSync(top, { recursive: true, force: true }));

  it("removes a removed build's caches and caches unused past the bound; keeps a live build's and what is no cache", () => {
    const buildRoot = join(top, 'builds');
    finishedBuild(buildRoot, 'live-recent');
    finishedBuild(buildRoot, 'live-old');
    const recent = usedCaches(buildRoot, 'live-recent', 0);
    const old = usedCaches(buildRoot, 'live-old', 10);
    const orphan = usedCaches(buildRoot, 'gone', 0);
    const checkoutRecent = usedCaches(buildRoot, null, 1);
    const notACache = join(rankCachesRoot(buildRoot), 'notes');
    mkdirSync(notACache);
    assert.equal(rankCaches(buildRoot, 'live-recent').state, 'warm', 'a cache set with output starts warm');

    const args = ['prune', '--rank-caches', '--older-than', '7d', '--build-dir', buildRoot];
    const dry = runOrch([...args, '--dry-run', '--json']);
    assert.equal(dry.status, 0, dry.stderr);
    const listed = JSON.parse(dry.stdout).rank_caches as { dir: string; why: string }[];
    assert.deepEqual(
      listed.map((c) => [c.dir, c.why]).sort(),
      [
        [old, 'unused'],
        [orphan, 'build removed'],
      ].sort(),
    );
    for (const d of [recent, old, orphan, checkoutRecent]) assert.ok(existsSync(d), `--dry-run removed ${d}`);

    const real = runOrch(args);
    assert.equal(real.status, 0, real.stderr);
    assert.match(real.stdout, /removed 2 rank cache sets/);
    assert.match(real.stdout, /its build is no longer in the build cache/);
    assert.ok(!existsSync(old) && !existsSync(orphan), 'the unused and the orphaned caches are gone');
    for (const d of [recent, checkoutRecent, notACache]) assert.ok(existsSync(d), `${d} was removed`);

    const everything = runOrch(['prune', '--rank-caches', '--older-than', '0s', '--build-dir', buildRoot, '--json']);
    assert.equal(everything.status, 0, everything.stderr);
    assert.ok(!existsSync(recent) && !existsSync(checkoutRecent), '0s: every cache set goes');
    assert.ok(existsSync(notACache), 'a directory that is no cache set stays');
  });

  it("a run-as user's cache sets: judged alike, the removed build's removed as that user, its directory kept", {
    skip: process.getuid?.() !== 0 && 'not root: only root can switch to a second local user (useradd, setpriv)',
  }, () => {
    const runAs = resolveRunAs('orch-test-run', { create: true, log: () => {} });
    // the build root's parent must be passable by the user, as the worker checks at its start
    chmodSync(top, 0o755);
    const buildRoot = join(top, 'run-as', 'builds');
    finishedBuild(buildRoot, 'live');
    const live = rankCaches(buildRoot, 'live', runAs);
    const orphan = rankCaches(buildRoot, 'gone', runAs);
    assert.equal(live.state, 'cold');
    assert.equal(statSync(orphan.env.TRITON_CACHE_DIR).uid, runAs.uid, 'made as the run-as user');
    assert.equal(statSync(dirname(orphan.dir)).mode & 0o777, 0o700);

    const r = runOrch(['prune', '--rank-caches', '--older-than', '7d', '--build-dir', buildRoot, '--json']);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(
      (JSON.parse(r.stdout).rank_caches as { dir: string; why: string }[]).map((c) => [c.dir, c.why]),
      [[orphan.dir, 'build removed']],
    );
    assert.ok(!existsSync(orphan.dir), "the removed build's caches are gone");
    assert.ok(
      existsSync(live.dir) && existsSync(dirname(live.dir)),
      "the live build's caches and the user's directory stay",
    );
  });
});
