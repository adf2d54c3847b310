/**
 * The worker's credentials leave its environment once read (worker/scrub-environ.ts): not only
 * process.env, but the block /proc/<pid>/environ shows, which any process of the worker's user
 * may read. Planted: deleting from process.env alone leaves them there.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const MODULE = fileURLToPath(new URL('../../worker/scrub-environ.ts', import.meta.url));

test('REDIS_URL and the cluster secret are gone from /proc/<pid>/environ after the scrub; the rest stays', {
  timeout: 30_000,
}, async () => {
  const script = `const { scrubEnviron } = await import(${JSON.stringify(MODULE)});
const left = scrubEnviron(['REDIS_URL', 'ORCH_CLUSTER_SECRET', 'NOT_SET_AT_ALL']);
console.log(JSON.stringify({ left, url: process.env.REDIS_URL ?? null, keep: process.env.KEEP_ME ?? null }));
setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: {
      PATH: process.env.PATH ?? '',
      REDIS_URL: 'redis://:pw-planted-7f3a@127.0.0.1:6379',
      ORCH_CLUSTER_SECRET: 'secret-planted-9c1e-0123456789abcdef',
      KEEP_ME: 'kept',
      XREDIS_URL: 'not-a-credential',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`the child exited ${code}`)));
    });
    assert.deepEqual(JSON.parse(line), { left: [], url: null, keep: 'kept' });
    const environ = readFileSync(`/proc/${child.pid}/environ`, 'latin1');
    assert.ok(!environ.includes('pw-planted-7f3a'), 'the Redis password is not in /proc/<pid>/environ');
    assert.ok(!environ.includes('secret-planted-9c1e'), 'the cluster secret is not in /proc/<pid>/environ');
    const entries = environ.split('\0');
    assert.ok(
      entries.includes('KEEP_ME=kept') && entries.includes('XREDIS_URL=not-a-credential'),
      'other variables stay, one whose name only ends like a credential included',
    );
  } finally {
    child.kill('SIGKILL');
  }
});
