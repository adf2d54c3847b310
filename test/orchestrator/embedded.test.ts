// The embedded default (no REDIS_URL), as a real `orch submit` process with fixture ranks:
// Ctrl-C mid-run cancels the experiment, writes its results (every planned rep accounted for),
// and takes the whole process tree down (redis-server, ranks); a failed experiment says why on
// stderr; a missing redis-server binary gets a message with the install command.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { EXIT_CODES } from '../../orchestrator/report/outcome-exit-code.ts';
import { waitFor } from '../utils/wait-for.ts';
import { isAlive as alive, FIXTURE_RANK, runOrch, spawnOrch } from './orch-cluster.ts';

const noCluster = { REDIS_URL: '', ORCH_PREFIX: '', ORCH_LOG: 'warn' };

test('embedded: Ctrl-C cancels, writes the results and leaves nothing running', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-embedded-'));
  try {
    const log = join(dir, 'ranks.jsonl');
    const results = join(dir, 'results');
    const run = spawnOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', results], {
      ...noCluster,
      ORCH_GRAPHRT: FIXTURE_RANK,
      ORCH_CPU_CARDS: '2',
      FIXTURE_LOG: log,
      FIXTURE_REP_MS: '3000',
    });
    await waitFor(
      'two ranks running',
      () => existsSync(log) && readFileSync(log, 'utf8').trim().split('\n').length >= 2,
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    const ranks = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { pid: number })
      .map((e) => e.pid);
    const tree = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(run.child.pid)], { encoding: 'utf8' });
    const redisPid = Number(
      tree
        .split('\n')
        .find((l) => l.includes('redis-server'))
        ?.trim()
        .split(/\s+/)[0],
    );
    assert.ok(redisPid > 0, `no redis-server child in:\n${tree}`);

    run.child.kill('SIGINT');
    const t0 = Date.now();
    const end = await run.exited;
    console.log(`exited ${end.code} ${Date.now() - t0} ms after SIGINT`);
    assert.equal(end.code, 130, run.out());
    assert.ok(!alive(redisPid), 'redis-server stopped');
    assert.ok(
      ranks.every((p) => !alive(p)),
      'ranks stopped',
    );
    const [id] = readdirSync(results);
    const summary = JSON.parse(readFileSync(join(results, id!, 'summary.json'), 'utf8')) as {
      state: string;
      accounting: { planned: number; measured: number; not_run: number; cancelled: number; unaccounted: string[] };
    };
    assert.equal(summary.state, 'cancelled');
    assert.equal(summary.accounting.planned, 12);
    assert.equal(summary.accounting.measured + summary.accounting.not_run + summary.accounting.cancelled, 12);
    assert.deepEqual(summary.accounting.unaccounted, []);
    assert.match(run.out(), /SIGINT: cancelling/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("embedded: a failed experiment ends with the failed outcome's exit code and its blocks' reasons on stderr", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-embedded-'));
  try {
    // rank 0 answers its first request with an error and exits 2 (bad input): unrecoverable
    const r = await runOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', join(dir, 'results')], {
      ...noCluster,
      ORCH_GRAPHRT: FIXTURE_RANK,
      ORCH_CPU_CARDS: '2',
      FIXTURE_FAIL: '0:1:2',
    });
    // the failed outcome's own code (it was 1, a bug's, while the report said "Exit code 5")
    assert.equal(r.code, EXIT_CODES.failed, r.stderr);
    assert.match(r.stderr, /orch: experiment \S+ ended failed: block 0: .*rank 0 on card /);
    assert.match(r.stdout, /^# \S+: FAILED$/m, 'the report heads the outcome, not a verdict of the partial data');
    assert.match(r.stdout, new RegExp(`Exit code ${EXIT_CODES.failed} \\(failed\\)\\.`), r.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('embedded: a missing redis-server binary names the install command', async () => {
  const r = await runOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml'], {
    ...noCluster,
    ORCH_REDIS_SERVER: '/nonexistent/redis-server',
    ORCH_GRAPHRT: FIXTURE_RANK,
  });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /cannot run "\/nonexistent\/redis-server"/);
  assert.match(r.stderr, /apt-get install -y redis-server/);
});
