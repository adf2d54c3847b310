/**
 * Bounded event payloads: an event written to the experiment's stream is capped at
 * MAX_EVENT_BYTES, the excess replaced by a note saying how much was cut; a short one is kept
 * whole. A rank's output is bounded per rep (the worker drops and notes the rest before the
 * answer) and per experiment (append-event.lua: every stream together, one note at the first
 * line refused, everything dropped counted in the budget hash). Through a real redis-server, as
 * the worker appends them.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import type { RankLine } from '../../jobs/rank-line.ts';
import { readOutputBudget } from '../../store/event-budget.ts';
import { orchKeys } from '../../store/keys.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
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
  const stream = new EventStream(
    redis,
    { stream: keys.events('x'), exp: keys.exp('x'), budget: keys.eventBudget('x') },
    pino({ level: 'silent' }),
  );
  const tags = { block: 0, attempt: 1, epoch: 1, host: 'h', card: 'cpu:0@h', rank: 0 };
  const big = `{"v":1,"type":"log","text":"${'é'.repeat(600_000)}"}`;
  stream.emit(tags, '{"v":1,"type":"ok"}');
  stream.emit(tags, big);
  await stream.flush();
  const entries = (await redis.xrange(keys.events('x'), '-', '+')) as [string, string[]][];
  const events = entries.map(([, flat]) => flat[flat.indexOf('event') + 1]!);
  assert.equal(events[0], '{"v":1,"type":"ok"}');
  assert.ok(Buffer.byteLength(events[1]!) < MAX_EVENT_BYTES + 200, `stored ${Buffer.byteLength(events[1]!)} bytes`);
  assert.match(
    events[1]!,
    new RegExp(`… \\[orch: event cut: ${Buffer.byteLength(big)} bytes, the first \\d+ kept\\]$`),
  );
  assert.ok(big.startsWith(events[1]!.slice(0, events[1]!.indexOf('…'))), 'the head is the event as printed');
});

const output = (id: string, line: string): RankLine => ({ v: 1, type: 'output', id, stream: 'stdout', line });
const answer = (id: string): RankLine => ({ v: 1, type: 'error', id, code: 'X', message: 'answer', final: true });
async function storedEvents(redis: Redis, key: string): Promise<string[]> {
  const entries = (await redis.xrange(key, '-', '+')) as [string, string[]][];
  return entries.map(([, flat]) => flat[flat.indexOf('event') + 1]!);
}

test('output past the rep bound is dropped and noted once before the answer; the experiment budget spans every stream, noted once, everything dropped counted', async () => {
  const keys = orchKeys(freshPrefix());
  await redis.hset(keys.exp('x'), 'state', 'running');
  const limits = { rep: { lines: 5, bytes: 1 << 20 }, experiment: { lines: 12, bytes: 1 << 20 } };
  const streamKeys = { stream: keys.events('x'), exp: keys.exp('x'), budget: keys.eventBudget('x') };
  // two ranks' workers, each its own stream object, one budget in Redis
  const a = new EventStream(redis, streamKeys, pino({ level: 'silent' }), limits);
  const b = new EventStream(redis, streamKeys, pino({ level: 'silent' }), limits);
  const tags = (rank: number) => ({ block: 0, attempt: 1, epoch: 1, host: 'h', card: `cpu:${rank}@h`, rank });
  for (let rep = 0; rep < 3; rep++) {
    for (const [s, rank] of [
      [a, 0],
      [b, 1],
    ] as const) {
      for (let i = 0; i < 40; i++)
        s.rankLine(tags(rank), output(`r${rep}`, `line ${i}`), JSON.stringify(output(`r${rep}`, `line ${i}`)));
      s.rankLine(tags(rank), answer(`r${rep}`), JSON.stringify(answer(`r${rep}`)));
    }
    // let the script's answers come back, as between two reps
    await a.flush();
    await b.flush();
  }
  const events = await storedEvents(redis, keys.events('x'));
  const stored = events.filter((e) => e.includes('"type":"output"'));
  assert.equal(stored.length, limits.experiment.lines, 'the experiment stores exactly its budget of output lines');
  const repNotes = events
    .filter((e) => e.includes('"scope":"rep"'))
    .map((e) => JSON.parse(e) as { dropped_lines: number; id: string });
  assert.equal(repNotes.length, 6, 'one rep note per rank and request');
  assert.ok(
    repNotes.every((n) => n.dropped_lines === 35),
    JSON.stringify(repNotes),
  );
  assert.equal(
    events.filter((e) => e.includes('"scope":"experiment"')).length,
    1,
    'the experiment note is written once',
  );
  assert.equal(
    events.filter((e) => e.includes('"message":"answer"')).length,
    6,
    'every answer stored, past both bounds',
  );
  const budget = await readOutputBudget(redis, keys.prefix, 'x');
  assert.equal(budget.lines, limits.experiment.lines);
  assert.equal(budget.dropped_lines, 6 * 40 - limits.experiment.lines, 'every line not stored is counted');
});
