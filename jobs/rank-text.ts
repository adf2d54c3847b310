/**
 * Text that came from a rank (its error message, stderr, stdout lines, a reason quoting them) is
 * data, never markup for whatever prints it: every output that shows rank text passes it through
 * `escapeRankText` first, so a program cannot move the terminal's cursor, clear the screen, set
 * the window title, or issue a CI runner's workflow command (`::error::`, `::add-mask::`,
 * `::stop-commands::`, the older `##[error]`) from inside orch's own output.
 *
 * - C0 controls, DEL, the C1 controls (ESC's 8-bit twins: U+0080-U+009F), lone surrogates and the
 *   bidirectional overrides/isolates (which reorder what a reader sees) become visible escapes:
 *   `\n`, `\r`, `\t`, `\x1b`, `\u202e`; the result is one line.
 * - A `::` or `##[` at the start of the text (after blanks) has its first character escaped
 *   (`\x3a:error::`, `\x23#[error]`): a runner reads a workflow command only at a line's start,
 *   and after the escaping above the text has no other line start.
 * - The result is at most `maxBytes` bytes of UTF-8 (an escape or a character is never split),
 *   the cut marked with how much was left out.
 */

/** The default bound of one rank text (an error, a reason quoting a rank): 4 KiB. */
export const RANK_TEXT_MAX_BYTES = 4096;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** One code point (or a lone surrogate) as it is printed. */
function visible(ch: string): string {
  const named = NAMED[ch];
  if (named !== undefined) return named;
  const c = ch.codePointAt(0) ?? 0;
  if (c < 0x20 || c === 0x7f) return `\\x${c.toString(16).padStart(2, '0')}`;
  if (
    (c >= 0x80 && c <= 0x9f) ||
    (c >= 0xd800 && c <= 0xdfff) ||
    (c >= 0x202a && c <= 0x202e) ||
    (c >= 0x2066 && c <= 0x2069) ||
    c === 0x200e ||
    c === 0x200f ||
    c === 0x061c
  ) {
    return `\\u${c.toString(16).padStart(4, '0')}`;
  }
  return ch;
}

const WORKFLOW_PREFIX = /^([ \t]*)(::|##\[)/;

/** Room kept for the cut marker: ` … [cut: N more bytes]` with N of up to 16 digits. */
const MARKER_ROOM = 48;

/**
 * `s` as one line of plain, visible text, at most `maxBytes` bytes of UTF-8 (default
 * RANK_TEXT_MAX_BYTES), safe to print on a terminal, in a CI log, a markdown file or a JSON log.
 */
export function escapeRankText(s: string, maxBytes: number = RANK_TEXT_MAX_BYTES): string {
  const pieces: { text: string; from: number }[] = [];
  let at = 0;
  const m = WORKFLOW_PREFIX.exec(s);
  if (m) {
    const lead = m[1] ?? '';
    pieces.push({ text: `${lead.replace(/\t/g, '\\t')}${m[2] === '::' ? '\\x3a:' : '\\x23#['}`, from: 0 });
    at = m[0].length;
  }
  let total = pieces.reduce((n, p) => n + Buffer.byteLength(p.text), 0);
  // for...of walks code points; a lone surrogate comes out alone and is escaped. The walk stops
  // once past the bound, so a 1 MiB line costs what its kept part costs.
  for (const ch of s.slice(at)) {
    if (total > maxBytes) break;
    const text = visible(ch);
    pieces.push({ text, from: at });
    total += Buffer.byteLength(text);
    at += ch.length;
  }
  if (total <= maxBytes) return pieces.map((p) => p.text).join('');
  const budget = Math.max(0, maxBytes - MARKER_ROOM);
  let bytes = 0;
  let kept = 0;
  for (const p of pieces) {
    const n = Buffer.byteLength(p.text);
    if (bytes + n > budget) break;
    bytes += n;
    kept++;
  }
  const cutAt = pieces[kept]?.from ?? s.length;
  return `${pieces
    .slice(0, kept)
    .map((p) => p.text)
    .join('')} … [cut: ${Buffer.byteLength(s.slice(cutAt))} more bytes]`;
}
