/**
 * events.jsonl is written in chunks: a huge experiment's events joined into one string crashed
 * `orch report` with `RangeError: Invalid string length`. Here 600 events of 1 MiB each (more
 * than V8's longest string, ~512 MiB, once joined) are written through the record's owner
 * (store/event-log.ts), and the file holds every line; a small file reads back as it was written.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { StreamEvent } from '../../jobs/stream-event.ts';
import { exportJsonl, importJsonl } from '../../store/event-log.ts';

const event = (i: number, body: StreamEvent['event']): StreamEvent => ({
  id: `${i}-0`,
  block: 0,
  attempt: 1,
  epoch: 1,
  host: 'h',
  card: 'cpu:0',
  rank: 0,
  committed: true,
  event: body,
});

test('events past the longest string V8 can build are written line by line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-jsonl-'));
  try {
    const text = 'x'.repeat(1 << 20);
    // one shared string per record: the records cost little memory, only their join would not fit
    const events = Array.from({ length: 600 }, (_, i) => event(i, text));
    const file = join(dir, 'events.jsonl');
    assert.equal(await exportJsonl(file, [events]), 600);
    const st = statSync(file);
    assert.equal(st.mode & 0o777, 0o600);
    assert.ok(st.size > 600 * (1 << 20), `${st.size} bytes`);
    const small = [
      event(1, 'é'),
      event(2, { v: 1, type: 'worker', event: 'block-failed', reason: 'r' }),
      event(3, null),
    ];
    await exportJsonl(file, [small]);
    const back: StreamEvent[] = [];
    for await (const e of importJsonl(file)) back.push(e);
    assert.deepEqual(back, small);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
