/**
 * The dashboard's list pages with a long queue are pages: /experiments shows 50 rows, newest
 * first, with the count of every state and a link to the next page; /queue shows the head of the
 * queue (50, in the scheduler's order) and how many wait behind it. Both read the same number of
 * Redis commands for 2 000 queued experiments as for 200. Before, each page read every
 * experiment's record, blocks and (the queue) its whole event stream one after another: at 10 000
 * queued they answered 503 "Redis unreachable" after 4 s while Redis was fine.
 */
import '../utils/cluster-secret.ts';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { countCommands } from '../orchestrator/command-count.ts';
import { abSpec } from '../orchestrator/in-process-scheduler.ts';
import { submitMany } from '../orchestrator/submit-many.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { testDashboard } from './dashboard-harness.ts';

const env = privateRedis();
after(() => env.server.stop());

async function pagesOf(
  queued: number,
): Promise<{ list: string; next: string; queue: string; commands: { list: number; queue: number } }> {
  const prefix = freshPrefix('dp');
  await submitMany(env.redis, prefix, mkdtempSync(join(tmpdir(), 'orch-pages-')), 'q', abSpec('q', 1, 2), queued);
  const d = await testDashboard({ url: env.server.url, prefix });
  try {
    const counter = countCommands();
    const list = await d.get('/experiments');
    const listCommands = counter.take().commands;
    const queue = await d.get('/queue');
    const queueCommands = counter.take().commands;
    counter.stop();
    assert.equal(list.status, 200, list.text.slice(0, 300));
    assert.equal(queue.status, 200, queue.text.slice(0, 300));
    const next = await d.get('/experiments?page=1');
    return {
      list: list.text,
      next: next.text,
      queue: queue.text,
      commands: { list: listCommands, queue: queueCommands },
    };
  } finally {
    await d.close();
  }
}

test('the experiments and queue pages are pages, in commands that do not grow with the queue', {
  timeout: 180_000,
}, async () => {
  const small = await pagesOf(200);
  const large = await pagesOf(2000);
  const rows = (page: string) => (page.match(/<tr data-experiment="[^"]+"><td><a href="\/experiments\//g) ?? []).length;
  assert.equal(rows(large.list), 50, 'one page of rows');
  assert.match(large.list, /2000 experiments: queued 2000/);
  assert.match(large.list, /q-1999<\/a>/, 'newest first');
  assert.match(large.list, /rel="next"/);
  assert.equal(rows(large.next), 50);
  assert.match(large.next, /q-1949<\/a>/, 'the second page goes on where the first ended');
  assert.equal((large.queue.match(/<section class="queued"/g) ?? []).length, 50, 'the head of the queue');
  assert.match(large.queue, /2000 in the queue, the first 50 shown \(1950 more behind them/);
  assert.match(large.queue, /data-experiment="q-0"/, 'oldest first, as the scheduler grants');
  console.log(
    `# Redis commands per page, 200 → 2 000 queued: /experiments ${small.commands.list} → ${large.commands.list}, /queue ${small.commands.queue} → ${large.commands.queue}`,
  );
  // a command per experiment would be 1 800 more; a pipeline of HGETs counts its entries, so the queue's grows by those alone
  assert.ok(
    large.commands.list - small.commands.list <= 5,
    `/experiments: ${small.commands.list} → ${large.commands.list}`,
  );
  assert.ok(
    large.commands.queue - small.commands.queue <= 1800 + 5,
    `/queue: ${small.commands.queue} → ${large.commands.queue}`,
  );
});
