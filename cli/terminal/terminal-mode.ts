/**
 * What the output stream can take: redrawn in place (a terminal that understands cursor moves),
 * coloured, and how wide. `TERM=dumb` gets no escape sequence at all, `NO_COLOR` (set and not
 * empty, as no-color.org defines it) no colour; a pipe or a file gets neither, and is as wide as
 * `COLUMNS` says, else unbounded.
 */
export interface TerminalMode {
  redraw: boolean;
  color: boolean;
  /** the width to fit lines to; null: no limit (a pipe with no COLUMNS) */
  columns: number | null;
}

export interface OutputStream {
  isTTY?: boolean;
  columns?: number;
}

export function terminalMode(stream: OutputStream, env: NodeJS.ProcessEnv = process.env): TerminalMode {
  const tty = stream.isTTY === true;
  const dumb = env.TERM === 'dumb';
  const fromEnv = Number(env.COLUMNS);
  const columns = tty && stream.columns ? stream.columns : Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : null;
  return {
    redraw: tty && !dumb,
    color: tty && !dumb && !(env.NO_COLOR !== undefined && env.NO_COLOR !== ''),
    columns,
  };
}

/** The stream's width as it is now (a resized terminal is drawn at its new width), for progressPrinter. */
export function liveColumns(stream: OutputStream, env: NodeJS.ProcessEnv = process.env): () => number | null {
  return () => terminalMode(stream, env).columns;
}
