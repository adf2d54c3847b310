/**
 * The experiment's event record read and written as a stream (store/event-log.ts), through its
 * schema (jobs/stream-event.ts):
 * - a planted malformed line in events.jsonl makes `orch report --from` refuse the directory
 *   with the file, the line number and the schema path (EVENTS_FILE_INVALID, exit 2, no stack);
 * - `orch report ID` (results written from Redis) and `orch report --from` on 200 000 events,
 *   under a V8 heap of HEAP_MIB, complete and peak at about what they peak at on 20 000: memory
 *   does not grow with the events. Holding the record (about 200 MiB as objects at 200 000) ran
 *   out of that heap. Peaks are the child's own VmHWM; no time is asserted.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { writeResults } from '../../orchestrator/results/write-results.ts';
import { runOrch, STACK_FRAME } from '../cli/run-orch.ts';
import { measureOrch } from '../utils/measure-orch.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { plantRecord } from '../utils/synthetic-record.ts';

const env = privateRedis();
const root = mkdtempSync(join(tmpdir(), 'orch-events-record-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** V8's old space for the commands measured: the folds' state fits, the events do not. */
const HEAP_MIB = 96;
/** Peak growth allowed from 20 000 to 200 000 events: the folds' state, never the events. */
const GROWTH_MIB = 32;

test('a malformed line of events.jsonl is refused with its file, line and schema path', async () => {
  const prefix = freshPrefix('ev');
  const id = await plantRecord(env.redis, prefix, 300);
  const { dir } = await writeResults(env.redis, prefix, id, root);
  const file = join(dir, 'events.jsonl');
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
  assert.equal(lines.length, 300);
  const ok = runOrch(['report', '--from', dir]);
  assert.ok(
    ok.status === 0 || ok.status === 3 || ok.status === 4,
    `the intact directory reports: exit ${ok.status}: ${ok.stderr}`,
  );
  const n = lines.findIndex((l) => l.includes('"type":"rep"') && l.includes('"rank":1')) + 1;
  assert.ok(n > 0);
  const bad = JSON.parse(lines[n - 1]!) as { event: { step_ms: unknown[] } };
  bad.event.step_ms[3] = 'fast';
  lines[n - 1] = JSON.stringify(bad);
  writeFileSync(file, `${lines.join('\n')}\n`);
  const r = runOrch(['report', '--from', dir]);
  assert.equal(r.status, 2, r.stderr);
  assert.ok(r.stderr.includes(`${file}:${n}: not an event record: event.step_ms.3: `), r.stderr);
  assert.ok(r.stderr.includes('EVENTS_FILE_INVALID') || r.stderr.includes('hint:'), r.stderr);
  assert.doesNotMatch(r.stderr, STACK_FRAME);
});

test('orch report ID and orch report --from peak alike at 20 000 and 200 000 events', async () => {
  const peaks: Record<string, { write: number; from: number }> = {};
  for (const n of [20_000, 200_000]) {
    const prefix = freshPrefix('ev');
    const id = await plantRecord(env.redis, prefix, n);
    const cli = { REDIS_URL: env.server.url, ORCH_PREFIX: prefix, ORCH_LOG: 'warn' };
    const w = measureOrch(['report', id, '--results', root], cli, { heapMiB: HEAP_MIB });
    assert.ok(
      w.status !== null && [0, 3, 4].includes(w.status),
      `orch report ${id} (${n} events, a ${HEAP_MIB} MiB heap): exit ${w.status}: ${w.stderr.slice(-2000)}`,
    );
    const dir = join(root, id);
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as { events: { total: number } };
    assert.equal(summary.events.total, n);
    const f = measureOrch(['report', '--from', dir], { ORCH_LOG: 'warn', REDIS_URL: '' }, { heapMiB: HEAP_MIB });
    assert.ok(
      f.status !== null && [0, 3, 4].includes(f.status),
      `orch report --from (${n} events, a ${HEAP_MIB} MiB heap): exit ${f.status}: ${f.stderr.slice(-2000)}`,
    );
    assert.equal(
      f.stdout,
      w.stdout.replace(/^results: .*$/m, `results: ${dir}`),
      'the rebuilt report is the written one',
    );
    peaks[n] = { write: w.peak_mib, from: f.peak_mib };
    await env.redis.del(`${prefix}:experiment:${id}:events`);
  }
  const [small, large] = [peaks[20_000]!, peaks[200_000]!];
  assert.ok(
    large.write - small.write < GROWTH_MIB,
    `orch report ID: ${small.write.toFixed(0)} MiB at 20 000 events, ${large.write.toFixed(0)} MiB at 200 000`,
  );
  assert.ok(
    large.from - small.from < GROWTH_MIB,
    `orch report --from: ${small.from.toFixed(0)} MiB at 20 000 events, ${large.from.toFixed(0)} MiB at 200 000`,
  );
});
