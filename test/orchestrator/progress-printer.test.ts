// `orch watch` without a terminal: a snapshot that changed nothing prints nothing, and a change
// prints only the line of what changed (never the whole frame again).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { progressPrinter, renderProgress, type Progress } from '../../orchestrator/experiment/progress.ts';

test('progressPrinter off a terminal: one line per change, nothing when nothing changed', () => {
  const out: string[] = [];
  const print = progressPrinter((s) => out.push(s), false);
  const block = (b: number, done: number) => ({ block: b, phase: 'running', attempt: 1, done, planned: 4, latest: null, why: null });
  const snap = (d0: number, d1: number): Progress => ({ experiment: 'e1', state: 'running', blocks: [block(0, d0), block(1, d1)] });
  print(snap(0, 0));
  assert.equal(out.length, 3, 'the first snapshot: the state and each block');
  out.length = 0;
  print(snap(0, 0));
  assert.equal(out.length, 0, 'nothing changed, nothing printed');
  print(snap(1, 0));
  assert.equal(out.length, 1);
  const line = renderProgress(snap(1, 0)).split('\n')[1]!.trim();
  assert.equal(out[0], `e1  ${line}\n`);
  assert.ok(!out[0]!.includes('\x1b['), 'no terminal control sequences in a pipe');
});
