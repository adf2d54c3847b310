/**
 * BlockDispatcher.close() is final (orchestrator/dispatch/block-dispatcher.ts): a dispatch after
 * it is refused, and nothing the dispatcher opens outlives it. Before, a dispatcher used after its
 * close started a new events reader whose connection nobody closed: its reconnect timer kept
 * test/multirank/command-gang.test.ts's process alive after every test had passed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { settleWithin } from '../../jobs/settle-within.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';

const FIXTURE = new URL('../fixtures/dispatcher-after-close.ts', import.meta.url).pathname;
/** How long a process that has ended its work may take to exit: node's start and tsx's load are in it. */
const EXIT_WITHIN_MS = 60_000;

const env = privateRedis();

test('a dispatcher used after close refuses the dispatch and leaves nothing that keeps its process alive', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, env.server.url, freshPrefix('dc')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => {
    out += b.toString();
  });
  const exited = once(child, 'exit');
  try {
    const ended = await settleWithin(exited, EXIT_WITHIN_MS);
    const said = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as { dispatchAfter?: string; waitAfter?: string };
    assert.match(said.dispatchAfter ?? '', /job dc\.b2-a1-nohost dispatched after close\(\)/);
    assert.match(said.waitAfter ?? '', /did not end within 300 ms/);
    assert.ok(ended, `the process printed ${JSON.stringify(out)} and was still alive ${EXIT_WITHIN_MS} ms later`);
  } finally {
    child.kill('SIGKILL');
  }
});
