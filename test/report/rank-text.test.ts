/**
 * jobs/rank-text.ts: hostile rank text (terminal escapes, newlines, CI workflow commands, C1
 * controls, bidi overrides, a 1 MiB line) comes out as one visible, bounded line; and every
 * output that prints a rank's reason passes it through (report.md's outcome lines, `orch status`,
 * the grouped reasons of the report's input section).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { escapeRankText, RANK_TEXT_MAX_BYTES } from '../../jobs/rank-text.ts';
import { assertInert } from '../utils/inert-text.ts';

const HOSTILE = [
  '::error::pwned',
  '::add-mask::hunter2',
  '  ::stop-commands::tok',
  '##[error]old style',
  'fine\n::error file=a.py,line=1::pwned\n##[warning]x',
  '\x1b[2J\x1b[H\x1b]0;title\x07cleared',
  'carriage\rreturn over',
  '\u009b31mC1 CSI',
  'bidi \u202eevil\u202c',
  'tab\there',
];

describe('escapeRankText', () => {
  for (const h of HOSTILE) {
    it(`makes ${JSON.stringify(h)} inert and visible`, () => {
      const out = escapeRankText(h);
      assertInert(out);
      assert.ok(!out.includes('\n'));
    });
  }

  it('shows what was escaped, so the user still reads it', () => {
    assert.equal(escapeRankText('a\nb'), 'a\\nb');
    assert.equal(escapeRankText('\x1b[31mred'), '\\x1b[31mred');
    assert.equal(escapeRankText('::error::x'), '\\x3a:error::x');
    assert.equal(escapeRankText('##[error]x'), '\\x23#[error]x');
    assert.equal(escapeRankText('a\n::error::x'), 'a\\n::error::x');
    assert.equal(escapeRankText('\u202e'), '\\u202e');
  });

  it('leaves ordinary text alone: C++ names, unicode, a Python traceback line', () => {
    for (const s of ['std::runtime_error: bad', 'ü → 🙂', 'File "model.py", line 12, in step'])
      assert.equal(escapeRankText(s), s);
  });

  it('is idempotent, so text escaped where it was stored prints the same when escaped again', () => {
    for (const h of HOSTILE) assert.equal(escapeRankText(escapeRankText(h)), escapeRankText(h));
    // cut too: the kept part and its marker fit the bound, so a second pass at it keeps them whole
    for (const max of [512, RANK_TEXT_MAX_BYTES]) {
      const cut = escapeRankText(`${HOSTILE.join('')}${'\x1b🙂'.repeat(5000)}`, max);
      assert.match(cut, /\[cut: \d+ more bytes\]$/);
      assert.equal(escapeRankText(cut, max), cut);
    }
  });

  it('cuts a 1 MiB line to the bound, marked, never inside an escape or a character', () => {
    const big = `${'🙂\x1b'.repeat(200_000)}`;
    const out = escapeRankText(big);
    assert.ok(Buffer.byteLength(out) <= RANK_TEXT_MAX_BYTES, `${Buffer.byteLength(out)} bytes`);
    const m = / … \[cut: (\d+) more bytes\]$/.exec(out);
    assert.ok(m, out.slice(-80));
    const kept = out.slice(0, m.index);
    assert.match(kept, /^(🙂\\x1b)+$/u);
    const keptSource = (kept.length / '🙂\\x1b'.length) * Buffer.byteLength('🙂\x1b');
    assert.equal(Number(m[1]), Buffer.byteLength(big) - keptSource);
    assert.ok(Buffer.byteLength(escapeRankText(big, 100)) <= 100);
  });

  it('keeps text within the bound whole', () => {
    const s = 'x'.repeat(RANK_TEXT_MAX_BYTES);
    assert.equal(escapeRankText(s), s);
  });
});
