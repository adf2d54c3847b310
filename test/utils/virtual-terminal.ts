/**
 * A screen that does what a VT100-style terminal does with the bytes a redraw writes: printable
 * characters at the cursor with auto-wrap at `columns` (the next character after the last column
 * goes to the next row), `\n`, `\r`, cursor up (`ESC[nA`) and erase to the end of the screen
 * (`ESC[J`). Colour sequences (`ESC[…m`) take no room. Enough to see what a redraw leaves behind.
 */
export class VirtualTerminal {
  private rows: string[][] = [[]];
  private row = 0;
  private col = 0;
  /** a character was written into the last column: the next one wraps first */
  private pendingWrap = false;

  constructor(public columns: number) {}

  write(s: string): void {
    for (let i = 0; i < s.length; i++) {
      const ch = s[i]!;
      if (ch === '\x1b') {
        // biome-ignore lint/suspicious/noControlCharactersInRegex: parses the ANSI escape sequence at ESC
        const m = /^\x1b\[([0-9;?]*)([A-Za-z])/.exec(s.slice(i));
        if (!m) throw new Error(`VirtualTerminal: unsupported escape at ${JSON.stringify(s.slice(i, i + 8))}`);
        this.escape(m[1]!, m[2]!);
        i += m[0].length - 1;
      } else if (ch === '\n') {
        this.newline();
      } else if (ch === '\r') {
        this.col = 0;
        this.pendingWrap = false;
      } else {
        this.put(ch);
      }
    }
  }

  /**
   * The terminal made `columns` wide, re-wrapping what it shows as most terminals do: a row wider
   * than the new width takes several. The cursor stays at the start of its (re-wrapped) row.
   */
  resize(columns: number): void {
    const chunks = (r: string[]) =>
      r.length === 0
        ? [[]]
        : Array.from({ length: Math.ceil(r.length / columns) }, (_, i) => r.slice(i * columns, (i + 1) * columns));
    const above = this.rows.slice(0, this.row).flatMap(chunks);
    const rest = this.rows.slice(this.row).flatMap(chunks);
    this.rows = [...above, ...rest];
    this.row = above.length;
    this.col = 0;
    this.pendingWrap = false;
    this.columns = columns;
  }

  /** The screen's rows as text, trailing blanks trimmed, the empty last rows left out. */
  screen(): string[] {
    const out = this.rows.map((r) => r.join('').trimEnd());
    while (out.length > 0 && out.at(-1) === '') out.pop();
    return out;
  }

  private escape(arg: string, cmd: string): void {
    if (cmd === 'A') {
      this.row = Math.max(0, this.row - (Number(arg) || 1));
      this.pendingWrap = false;
    } else if (cmd === 'J') {
      this.rows[this.row] = this.line(this.row).slice(0, this.col);
      this.rows.length = this.row + 1;
    } else if (cmd !== 'm') {
      throw new Error(`VirtualTerminal: unsupported escape ESC[${arg}${cmd}`);
    }
  }

  private put(ch: string): void {
    if (this.pendingWrap) {
      this.newline();
      this.pendingWrap = false;
    }
    const line = this.line(this.row);
    while (line.length < this.col) line.push(' ');
    line[this.col] = ch;
    if (this.col === this.columns - 1) this.pendingWrap = true;
    else this.col++;
  }

  private newline(): void {
    this.row++;
    this.col = 0;
    this.pendingWrap = false;
    this.line(this.row);
  }

  private line(r: number): string[] {
    while (this.rows.length <= r) this.rows.push([]);
    return this.rows[r]!;
  }
}
