// What `orch watch` and `orch submit --watch` draw (cli/terminal/): on a terminal, frames redrawn
// in place leave nothing of an earlier frame behind at 80 columns, even when a line is longer than
// the width (a waiting block's reason) or the terminal was made narrower; off a terminal and under
// TERM=dumb, append-only lines with no escape sequence, none wider than COLUMNS, at a bounded rate.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { displayWidth, stripEscapes, truncateToWidth } from '../../cli/terminal/display-width.ts';
import { barWidth, progressPrinter } from '../../cli/terminal/progress-printer.ts';
import { progressLines } from '../../cli/terminal/progress-view.ts';
import { terminalMode } from '../../cli/terminal/terminal-mode.ts';
import type { BlockProgress, Progress } from '../../orchestrator/experiment/progress.ts';
import { VirtualTerminal } from '../utils/virtual-terminal.ts';

// biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for the ESC of an escape sequence
const ESC = /\x1b/;
const LONG_WHY =
  'waiting for 2 free card(s); held by exp-0123456789abcdef/0, its end unknown (no step time of its workload measured yet)';

function block(b: number, done: number, phase = 'running', why: string | null = null): BlockProgress {
  return {
    block: b,
    phase,
    attempt: phase === 'waiting' ? 0 : 1,
    done,
    planned: 8,
    latest: null,
    why,
    eta: done > 0 ? { ms: (8 - done) * 1500, basis: 'measured', reps: done } : null,
  };
}

function snap(done: number, state: Progress['state'] = 'running', elapsedMs = done * 1000): Progress {
  return {
    experiment: 'exp-0123456789abcdef',
    state,
    elapsedMs,
    eta: done > 0 ? { ms: (16 - done) * 1500, basis: 'measured', reps: done } : null,
    blocks: [block(0, done), block(1, 0, 'waiting', LONG_WHY)],
  };
}

test('redraw at 80 columns: the screen shows the last frame only, each line within the width', () => {
  const term = new VirtualTerminal(80);
  const print = progressPrinter((s) => term.write(s), { redraw: true, color: true, columns: 80 });
  for (let d = 0; d <= 5; d++) print(snap(d));
  const last = progressLines(snap(5), { color: false, barWidth: barWidth(80) }).map((l) => truncateToWidth(l.text, 79));
  assert.deepEqual(
    term.screen(),
    last.map((l) => l.trimEnd()),
    `the screen:\n${term.screen().join('\n')}`,
  );
  assert.ok(term.screen().every((l) => displayWidth(l) < 80));
  assert.ok(term.screen()[2]!.endsWith('…'), 'the waiting reason was cut, not wrapped');
});

test('redraw after the terminal was made narrower: the rows the last frame takes now are erased', () => {
  let cols = 100;
  const term = new VirtualTerminal(cols);
  const print = progressPrinter(
    (s) => term.write(s),
    { redraw: true, color: false, columns: cols },
    { columns: () => cols },
  );
  print(snap(1));
  // the frame's 99-column line now takes two rows of 60
  cols = 60;
  term.resize(cols);
  print(snap(2));
  const shown = term.screen();
  assert.deepEqual(
    shown,
    progressLines(snap(2), { color: false, barWidth: barWidth(cols) }).map((l) =>
      truncateToWidth(l.text, 59).trimEnd(),
    ),
    `the screen:\n${shown.join('\n')}`,
  );
});

test('TERM=dumb and NO_COLOR: no redraw, no colour; a pipe takes its width from COLUMNS', () => {
  assert.deepEqual(terminalMode({ isTTY: true, columns: 120 }, { TERM: 'dumb' }), {
    redraw: false,
    color: false,
    columns: 120,
  });
  assert.deepEqual(terminalMode({ isTTY: true, columns: 120 }, { TERM: 'xterm', NO_COLOR: '1' }), {
    redraw: true,
    color: false,
    columns: 120,
  });
  assert.deepEqual(
    terminalMode({ isTTY: true, columns: 120 }, { TERM: 'xterm', NO_COLOR: '' }),
    { redraw: true, color: true, columns: 120 },
    'an empty NO_COLOR is unset',
  );
  assert.deepEqual(terminalMode({ isTTY: false }, { COLUMNS: '80' }), { redraw: false, color: false, columns: 80 });
  assert.deepEqual(terminalMode({ isTTY: false }, {}), { redraw: false, color: false, columns: null });
});

test('append-only (a pipe, TERM=dumb): changed lines only, none wider than the width, at most one batch per interval, the end always', () => {
  const out: string[] = [];
  let now = 0;
  const print = progressPrinter((s) => out.push(s), terminalMode({ isTTY: true, columns: 80 }, { TERM: 'dumb' }), {
    now: () => now,
    appendEveryMs: 2000,
    heartbeatMs: 30_000,
  });
  print(snap(0));
  const first = out.join('').split('\n').filter(Boolean);
  assert.equal(first.length, 3, 'the first snapshot: the state and each block');
  out.length = 0;
  now = 500;
  print(snap(1));
  assert.equal(out.length, 0, 'within the interval: nothing, though a block moved');
  now = 2500;
  print(snap(1, 'running', 2500));
  assert.deepEqual(
    out
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('  ')[1]),
    ['block 0'],
    'only the block that moved, not the clock',
  );
  out.length = 0;
  now = 5000;
  print(snap(1, 'running', 5000));
  assert.equal(out.length, 0, 'nothing moved but the clock: nothing printed');
  now = 5100;
  print(snap(8, 'done', 5100));
  const end = out.join('');
  assert.match(end, /exp-0123456789abcdef {2}done {2}elapsed 5 s/, 'the end is printed at once');
  for (const s of [...first, ...end.split('\n')]) {
    assert.doesNotMatch(s, ESC, 'no escape sequence');
    assert.ok(displayWidth(s) <= 80, `within 80 columns: ${s}`);
  }
});

test('display width: escape sequences take none, wide characters two; a cut ends in … within the width', () => {
  assert.equal(displayWidth('\x1b[32mdone\x1b[0m'), 4);
  assert.equal(displayWidth('実験'), 4);
  const cut = truncateToWidth(`\x1b[32m${'x'.repeat(100)}\x1b[0m`, 10);
  assert.equal(displayWidth(cut), 10);
  assert.equal(stripEscapes(cut), `${'x'.repeat(9)}…`);
  assert.equal(displayWidth(truncateToWidth('実験'.repeat(10), 9)), 9);
});

test('orch submit draws progress by default on a terminal only; --no-watch and --json turn it off, --watch on in a pipe', async () => {
  const { watchByDefault } = await import('../../cli/commands/submit.ts');
  assert.equal(watchByDefault(undefined, false, { isTTY: true }), true);
  assert.equal(watchByDefault(undefined, false, {}), false, 'a pipe: no progress unless asked');
  assert.equal(watchByDefault(false, false, { isTTY: true }), false);
  assert.equal(watchByDefault(true, false, {}), true);
  assert.equal(watchByDefault(undefined, true, { isTTY: true }), false, '--json');
});

test('the width is read at each frame: a terminal widened past 80 columns gets longer lines', async () => {
  const { liveColumns } = await import('../../cli/terminal/terminal-mode.ts');
  const stream = { isTTY: true, columns: 80 };
  const columns = liveColumns(stream, {});
  assert.equal(columns(), 80);
  stream.columns = 200;
  assert.equal(columns(), 200);
});
