/**
 * A grant pass's Redis traffic does not grow with the queue: with 2 000 queued experiments it
 * sends about what it sends with 200 (commands and their arguments per pass, counted on the
 * client). At 10 000 queued every pass read every active id and every one's state, and the
 * scheduler finished about 5 experiments/s at a full core. Counts, not timings.
 */
import '../utils/cluster-secret.ts';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CardRegistry } from '../../store/card-registry.ts';
import { countCommands } from '../orchestrator/command-count.ts';
import { abSpec, startScheduler } from '../orchestrator/in-process-scheduler.ts';
import { submitMany } from '../orchestrator/submit-many.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';

const env = privateRedis();
after(() => env.server.stop());

async function perPass(queued: number): Promise<{ commands: number; args: number }> {
  const redis = env.redis;
  const prefix = freshPrefix('pc');
  const dir = mkdtempSync(join(tmpdir(), 'orch-pass-'));
  // no worker: the cards are registered but nothing runs, so every experiment stays queued
  await new CardRegistry(redis, { prefix }).register(
    'h0',
    [{ id: 'cpu:0@h0', host: 'h0', backend: 'cpu', index: 0, uuid: 'cpu:0@h0', name: 'cpu' }],
    { ttlMs: 600_000, pid: process.pid },
  );
  await submitMany(redis, prefix, dir, 'q', abSpec('q', 1, 2), queued);
  const s = await startScheduler({ url: env.server.url, prefix, safetyPollMs: 200 });
  try {
    // the term's first passes read the queue's records (once each); then it is steady
    await new Promise((r) => setTimeout(r, 3000));
    // one lease read per pass (LeaseStore.leased over the live cards: the one card's lease key)
    const counter = countCommands(
      (c) => c.name === 'evalsha' && c.args.some((a) => String(a).endsWith(':lease:cpu:0@h0')),
    );
    try {
      for (let k = 0; k < 40; k++) {
        s.scheduler.kick();
        await new Promise((r) => setTimeout(r, 25));
      }
      const c = counter.take();
      assert.ok(c.passes >= 5, `only ${c.passes} passes counted`);
      return { commands: c.commands / c.passes, args: c.args / c.passes };
    } finally {
      counter.stop();
    }
  } finally {
    await s.stop();
  }
}

test('a grant pass sends as much to Redis with 2 000 queued experiments as with 200', {
  timeout: 120_000,
}, async () => {
  const small = await perPass(200);
  const large = await perPass(2000);
  console.log(
    `# per pass: 200 queued ${small.commands.toFixed(1)} commands, ${small.args.toFixed(0)} arguments; 2000 queued ${large.commands.toFixed(1)} commands, ${large.args.toFixed(0)} arguments`,
  );
  assert.ok(
    large.commands <= small.commands * 1.5 + 2,
    `commands per pass grew with the queue: ${small.commands.toFixed(1)} → ${large.commands.toFixed(1)}`,
  );
  assert.ok(
    large.args <= small.args * 2 + 100,
    `arguments per pass grew with the queue: ${small.args.toFixed(0)} → ${large.args.toFixed(0)}`,
  );
});
