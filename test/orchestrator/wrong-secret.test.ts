/**
 * A worker started with another cluster secret than orch serve's refuses every block job at its
 * grant check (GRANT_INVALID) and runs nothing. What `orch submit` prints, and `orch report` after
 * it, must say so first — which host, that its secret is not serve's, and the fix — instead of
 * "no usable rep" with the reason dozens of lines down, once per rep.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { waitFor } from '../utils/wait-for.ts';
import { FIXTURE_RANK, type OrchChild, runOrch, spawnOrch, startCluster } from './orch-cluster.ts';

const HOST = 'othersecret';
const PLANTED_SECRET = 'planted-wrong-secret-7f3a9c1e5b2d4f60';
const FIRST = new RegExp(
  `^- the worker of host ${HOST} refused \\d+ block jobs? at its grant check \\(GRANT_INVALID\\): the grants orch serve signed do not verify with its cluster secret \\(the worker holds another secret than orch serve\\), so nothing ran there — start orch worker --host ${HOST} with the cluster secret orch serve holds \\(--secret-file FILE, or ORCH_CLUSTER_SECRET`,
);

/**
 * The first bullet under the report's opening verdict: every block failed, so the experiment ended
 * failed ("**Failed — no verdict"); were some reps measured elsewhere, the input gate's "**Invalid".
 */
function firstReason(report: string): string {
  const lines = report.split('\n');
  const at = lines.findIndex((l) => l.startsWith('**Invalid') || l.startsWith('**Failed'));
  assert.ok(at >= 0 && at < 4, `the report does not open with why it has no verdict:\n${report.slice(0, 1500)}`);
  return lines.slice(at + 1).find((l) => l.startsWith('- ')) ?? '';
}

test('a worker with the wrong cluster secret: submit and report name it first, with the fix', {
  timeout: 180_000,
}, async () => {
  const c = await startCluster();
  const dir = mkdtempSync(join(tmpdir(), 'orch-wrong-secret-'));
  let worker: OrchChild | null = null;
  try {
    c.startServe();
    worker = spawnOrch(
      [
        'worker',
        '--host',
        HOST,
        '--cpu-cards',
        '1',
        '--graphrt',
        FIXTURE_RANK,
        '--heartbeat-ms',
        '1000',
        '--lock-dir',
        join(dir, 'locks'),
        '--prefix',
        c.prefix,
      ],
      { ...c.env, ORCH_CLUSTER_SECRET: PLANTED_SECRET, FIXTURE_REP_MS: '50' },
    );
    await waitFor(
      `worker ${HOST} registered`,
      async () => (await c.redis.exists(`${c.prefix}:host:${HOST}:alive`)) === 1,
      { timeoutMs: 30_000 },
    );
    const submit = await runOrch(
      ['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', join(dir, 'results')],
      c.env,
      120_000,
    );
    assert.match(firstReason(submit.stdout), FIRST, submit.stdout.slice(0, 2000));
    const [id] = readdirSync(join(dir, 'results'));
    assert.ok(id !== undefined, submit.stderr);
    const report = await runOrch(['report', id, '--results', join(dir, 'report')], c.env);
    assert.match(firstReason(report.stdout), FIRST, report.stdout.slice(0, 2000));
    // the secret itself is never printed
    const printed = `${submit.stdout}${submit.stderr}${report.stdout}${report.stderr}`;
    assert.ok(!printed.includes(PLANTED_SECRET), "the worker's secret was printed");
  } finally {
    // not one of the cluster's own children: stopped here, by its pid
    worker?.child.kill('SIGKILL');
    await worker?.exited;
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
