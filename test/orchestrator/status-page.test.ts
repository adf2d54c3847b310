/**
 * `orch status` with a long queue is a page: the first experiments (20 by default) and the count
 * of every state, read in as many commands for 1 000 queued experiments as for 100. With 10 000
 * queued it read every experiment, its blocks and its results one after another (3.8 s) and
 * printed 4.5 MB.
 */
import '../utils/cluster-secret.ts';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { clusterStatus, renderStatus } from '../../orchestrator/experiment/cluster-status.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { countCommands } from './command-count.ts';
import { abSpec } from './in-process-scheduler.ts';
import { submitMany } from './submit-many.ts';

const env = privateRedis();
after(() => env.server.stop());

async function statusOf(queued: number, limit?: number) {
  const prefix = freshPrefix('sp');
  await submitMany(env.redis, prefix, mkdtempSync(join(tmpdir(), 'orch-status-')), 'q', abSpec('q', 2, 2), queued);
  const counter = countCommands();
  try {
    const s = await clusterStatus(env.redis, prefix, limit === undefined ? {} : { limit });
    return { s, commands: counter.take().commands };
  } finally {
    counter.stop();
  }
}

test('orch status shows a page of the queue with the count of every state, in commands that do not grow with it', {
  timeout: 120_000,
}, async () => {
  const small = await statusOf(100);
  const large = await statusOf(1000);
  assert.equal(large.s.experiments.length, 20, 'the default page');
  assert.deepEqual(large.s.counts, { queued: 1000 });
  assert.equal(large.s.not_shown, 980);
  assert.deepEqual(large.s.experiments.map((e) => e.id).slice(0, 2), ['q-0', 'q-1'], 'oldest first');
  const text = renderStatus(large.s);
  assert.match(text, /experiments \(queued 1000\)/);
  assert.match(text, /980 more not shown \(orch status --limit N/);
  console.log(
    `# status commands: 100 queued ${small.commands}, 1000 queued ${large.commands}; text ${text.length} bytes`,
  );
  assert.equal(large.commands, small.commands, 'commands for 1 000 queued against 100');
  const five = await statusOf(30, 5);
  assert.equal(five.s.experiments.length, 5);
  assert.equal(five.s.not_shown, 25);
});
