/**
 * The results writer follows no planted link (orchestrator/report/results-out-dir.ts): a symbolic
 * link planted at results/<id> before the run, or at a file inside results/<id>, or at a report
 * file of a directory `orch report --from` rebuilds, is refused with RESULTS_PATH_UNSAFE naming
 * the path and the fix, and what it points at is neither written nor chmod-ed. Results written a
 * second time into the directory orch made are written as before. Real Redis, a synthetic record.
 */
import assert from 'node:assert/strict';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { UserInputError } from '../../jobs/errors.ts';
import { rebuildReport } from '../../orchestrator/report/rebuild-report.ts';
import { writeResults } from '../../orchestrator/results/write-results.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { plantRecord } from '../utils/synthetic-record.ts';

const env = privateRedis();
const scratch = mkdtempSync(join(tmpdir(), 'orch-results-no-follow-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function refusal(path: string, problem: RegExp): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof UserInputError, String(err));
    assert.equal(err.code, 'RESULTS_PATH_UNSAFE');
    assert.ok(err.message.startsWith(`results path ${path} `), err.message);
    assert.match(err.message, problem);
    assert.match(err.hint ?? '', new RegExp(`remove ${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    return true;
  };
}

test('a symbolic link planted at results/<id> is refused; the directory it points at is untouched', async () => {
  const prefix = freshPrefix('nf');
  const id = await plantRecord(env.redis, prefix, 50);
  const root = join(scratch, 'dir-link', 'results');
  const elsewhere = join(scratch, 'dir-link', 'elsewhere');
  mkdirSync(root, { recursive: true });
  mkdirSync(elsewhere, { mode: 0o755 });
  symlinkSync(elsewhere, join(root, id));
  await assert.rejects(
    writeResults(env.redis, prefix, id, root),
    refusal(join(root, id), /is a symbolic link \(to .*elsewhere\); nothing was written there$/),
  );
  assert.deepEqual(readdirSync(elsewhere), [], 'nothing written through the link');
  assert.equal(statSync(elsewhere).mode & 0o777, 0o755, 'nor chmod-ed through it');
});

test('a symbolic link planted at a file in results/<id> is refused; its target keeps its content; a clean rewrite works', async () => {
  const prefix = freshPrefix('nf');
  const id = await plantRecord(env.redis, prefix, 50);
  const root = join(scratch, 'file-link', 'results');
  const first = await writeResults(env.redis, prefix, id, root);
  assert.equal(statSync(first.dir).mode & 0o777, 0o700);
  assert.equal(statSync(join(first.dir, 'spec.yaml')).mode & 0o777, 0o600);
  // written again into the directory orch made: as before
  const again = await writeResults(env.redis, prefix, id, root);
  assert.equal(readFileSync(join(again.dir, 'report.md'), 'utf8'), first.report);

  const victim = join(scratch, 'file-link', 'victim.txt');
  writeFileSync(victim, "not orch's\n", { mode: 0o644 });
  rmSync(join(first.dir, 'spec.yaml'));
  symlinkSync(victim, join(first.dir, 'spec.yaml'));
  await assert.rejects(
    writeResults(env.redis, prefix, id, root),
    refusal(join(first.dir, 'spec.yaml'), /is a symbolic link \(to .*victim\.txt\)/),
  );
  rmSync(join(first.dir, 'spec.yaml'));
  rmSync(join(first.dir, 'events.jsonl'));
  symlinkSync(victim, join(first.dir, 'events.jsonl'));
  await assert.rejects(
    writeResults(env.redis, prefix, id, root),
    refusal(join(first.dir, 'events.jsonl'), /is a symbolic link \(to .*victim\.txt\)/),
  );
  assert.equal(readFileSync(victim, 'utf8'), "not orch's\n");
  assert.equal(statSync(victim).mode & 0o777, 0o644);

  // orch report --from: the directory is the user's, its report files are written through no link
  const clean = await writeResults(env.redis, prefix, id, join(scratch, 'file-link', 'clean'));
  rmSync(join(clean.dir, 'report.md'));
  symlinkSync(victim, join(clean.dir, 'report.md'));
  await assert.rejects(rebuildReport(clean.dir), refusal(join(clean.dir, 'report.md'), /is a symbolic link/));
  assert.equal(readFileSync(victim, 'utf8'), "not orch's\n");
});
