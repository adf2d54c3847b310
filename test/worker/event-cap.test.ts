/**
 * Bounded event payloads: an event written to the experiment's stream is capped at
 * MAX_EVENT_BYTES, the excess replaced by a note saying how much was cut; a short one is kept
 * whole. Through a real redis-server, as the worker appends them.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import type { Redis } from 'ioredis';
import { orchKeys } from '../../store/keys.ts';
import { startRedisServer, type RedisServerProcess } from '../../store/redis-server-process.ts';
import { EventStream, MAX_EVENT_BYTES } from '../../worker/event-stream.ts';
import { client, freshPrefix } from '../utils/redis.ts';

let server: RedisServerProcess;
let redis: Redis;
before(async () => {
  server = await startRedisServer();
  redis = client(server.url);
});
after(async () => {
  redis.disconnect();
  await server.stop();
});

test('an oversized event is cut to MAX_EVENT_BYTES plus a note; a short one is kept whole', async () => {
  const keys = orchKeys(freshPrefix());
  await redis.hset(keys.exp('x'), 'state', 'running');
  const stream = new EventStream(redis, keys.events('x'), pino({ level: 'silent' }), keys.exp('x'));
  const tags = { block: 0, attempt: 1, epoch: 1, host: 'h', card: 'cpu:0@h', rank: 0 };
  const big = `{"v":1,"type":"log","text":"${'é'.repeat(600_000)}"}`;
  stream.emit(tags, '{"v":1,"type":"ok"}');
  stream.emit(tags, big);
  await stream.flush();
  const entries = (await redis.xrange(keys.events('x'), '-', '+')) as [string, string[]][];
  const events = entries.map(([, flat]) => flat[flat.indexOf('event') + 1]!);
  assert.equal(events[0], '{"v":1,"type":"ok"}');
  assert.ok(Buffer.byteLength(events[1]!) < MAX_EVENT_BYTES + 200, `stored ${Buffer.byteLength(events[1]!)} bytes`);
  assert.match(events[1]!, new RegExp(`… \\[orch: event cut: ${Buffer.byteLength(big)} bytes, the first \\d+ kept\\]$`));
  assert.ok(big.startsWith(events[1]!.slice(0, events[1]!.indexOf('…'))), 'the head is the event as printed');
});
