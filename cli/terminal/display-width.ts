/**
 * How many terminal columns a string takes, and a string cut to fit: what a redraw needs to
 * know how many rows its last frame took. Escape sequences take none; East Asian wide and
 * emoji code points take two; combining marks none. (The width tables of a library such as
 * string-width are more complete; orch's own lines are ASCII but for ids, names and hosts.)
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: an ANSI escape sequence starts with ESC
const ESCAPES = /\x1b\[[0-9;?]*[ -/]*[@-~]/g;

const WIDE: [number, number][] = [
  [0x1100, 0x115f],
  [0x2e80, 0xa4cf],
  [0xac00, 0xd7a3],
  [0xf900, 0xfaff],
  [0xfe30, 0xfe4f],
  [0xff00, 0xff60],
  [0xffe0, 0xffe6],
  [0x1f300, 0x1f64f],
  [0x1f900, 0x1f9ff],
  [0x20000, 0x3fffd],
];

function codePointWidth(cp: number): number {
  if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) return 0;
  if ((cp >= 0x300 && cp <= 0x36f) || cp === 0x200b || (cp >= 0xfe00 && cp <= 0xfe0f)) return 0;
  return WIDE.some(([a, b]) => cp >= a && cp <= b) ? 2 : 1;
}

export function stripEscapes(s: string): string {
  return s.replace(ESCAPES, '');
}

export function displayWidth(s: string): number {
  let w = 0;
  for (const ch of stripEscapes(s)) w += codePointWidth(ch.codePointAt(0)!);
  return w;
}

/** `s` cut to at most `columns` columns, ending in `…` when cut (escape sequences are kept, at no width). */
export function truncateToWidth(s: string, columns: number): string {
  if (displayWidth(s) <= columns) return s;
  let out = '';
  let w = 0;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: splits at ANSI escape sequences, which start with ESC
  for (const part of s.split(/(\x1b\[[0-9;?]*[ -/]*[@-~])/)) {
    if (part.startsWith('\x1b[')) {
      out += part;
      continue;
    }
    for (const ch of part) {
      const cw = codePointWidth(ch.codePointAt(0)!);
      if (w + cw > columns - 1) return `${out}…${s.includes('\x1b[') ? '\x1b[0m' : ''}`;
      out += ch;
      w += cw;
    }
  }
  return out;
}
