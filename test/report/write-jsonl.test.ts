/**
 * events.jsonl is written in chunks: a huge experiment's events joined into one string crashed
 * `orch report` with `RangeError: Invalid string length`. Here 600 events of 1 MiB each (more
 * than V8's longest string, ~512 MiB, once joined) are written, and the file holds every line.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeJsonLines } from '../../orchestrator/results/write-jsonl.ts';

test('events past the longest string V8 can build are written line by line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-jsonl-'));
  try {
    const text = 'x'.repeat(1 << 20);
    // one shared string per record: the records cost little memory, only their join would not fit
    const events = Array.from({ length: 600 }, (_, i) => ({ i, text }));
    const file = join(dir, 'events.jsonl');
    writeJsonLines(file, events);
    const st = statSync(file);
    assert.equal(st.mode & 0o777, 0o600);
    assert.ok(st.size > 600 * (1 << 20), `${st.size} bytes`);
    writeJsonLines(file, [{ a: 1 }, { b: 'é' }]);
    assert.equal(readFileSync(file, 'utf8'), '{"a":1}\n{"b":"é"}\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
