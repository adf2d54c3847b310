/**
 * Prints progress snapshots for `orch watch` and `orch submit --watch`, as the output can take
 * them (terminal-mode.ts):
 * - redraw: each frame replaces the last in place. Every line is cut to the width, so a line
 *   never wraps and the cursor moves up exactly the rows the last frame took (at the width the
 *   terminal has now: a terminal made narrower re-wraps what it shows). A wrapped line counted as
 *   one row left stale copies of the frame behind at 80 columns.
 * - append (a pipe, a file, TERM=dumb): only the lines that changed, no escape sequence, at most
 *   one batch every `appendEveryMs` (the end always), and the header again every `heartbeatMs`
 *   so a log shows the clock and the ETA; a log grows with progress rather than with time.
 */

import type { Progress } from '../../orchestrator/experiment/progress.ts';
import { isEnded } from '../../orchestrator/experiment/progress.ts';
import { displayWidth, truncateToWidth } from './display-width.ts';
import { progressLines } from './progress-view.ts';
import type { TerminalMode } from './terminal-mode.ts';

export interface PrinterOptions {
  appendEveryMs?: number;
  heartbeatMs?: number;
  /** the clock, for the append rate (tests pass their own) */
  now?: () => number;
  /** the current width (a terminal can be resized between frames); default: the mode's */
  columns?: () => number | null;
}

export function progressPrinter(
  write: (s: string) => void,
  mode: TerminalMode,
  opts: PrinterOptions = {},
): (p: Progress) => void {
  const columns = opts.columns ?? (() => mode.columns);
  return mode.redraw ? redrawPrinter(write, mode, columns) : appendPrinter(write, mode, columns, opts);
}

/** A narrow terminal gets a short bar, so the reps, the time left and the latest rep still fit. */
export function barWidth(columns: number | null): number {
  return columns === null || columns >= 120 ? 24 : 10;
}

function redrawPrinter(
  write: (s: string) => void,
  mode: TerminalMode,
  columns: () => number | null,
): (p: Progress) => void {
  // the widths of the last frame's lines, to count its rows at the width the terminal has now
  let drawn: number[] = [];
  return (p) => {
    const cols = columns();
    const fit = (s: string) => (cols === null ? s : truncateToWidth(s, Math.max(1, cols - 1)));
    const lines = progressLines(p, { color: mode.color, barWidth: barWidth(cols) }).map((l) => fit(l.text));
    const rows = drawn.reduce((n, w) => n + (cols === null || w === 0 ? 1 : Math.ceil(w / cols)), 0);
    write(`${rows > 0 ? `\r\x1b[${rows}A\x1b[J` : ''}${lines.join('\n')}\n`);
    drawn = lines.map(displayWidth);
  };
}

function appendPrinter(
  write: (s: string) => void,
  mode: TerminalMode,
  columns: () => number | null,
  opts: PrinterOptions,
): (p: Progress) => void {
  const now = opts.now ?? Date.now;
  const every = opts.appendEveryMs ?? 2000;
  const heartbeat = opts.heartbeatMs ?? 30_000;
  const printed = new Map<string, string>();
  let lastBatch = Number.NEGATIVE_INFINITY;
  let lastHeader = Number.NEGATIVE_INFINITY;
  return (p) => {
    const t = now();
    const ended = isEnded(p.state);
    if (!ended && t - lastBatch < every) return;
    const cols = columns();
    const fit = (s: string) => (cols === null ? s : truncateToWidth(s, cols));
    const out: string[] = [];
    for (const l of progressLines(p, { color: mode.color, barWidth: barWidth(cols) })) {
      const header = l.key === 'state';
      const due = header && t - lastHeader >= heartbeat;
      if (printed.get(l.key) === l.change && !due) continue;
      printed.set(l.key, l.change);
      if (header) lastHeader = t;
      out.push(fit(header ? l.text : `${p.experiment}  ${l.text.trim()}`));
    }
    if (out.length === 0) return;
    lastBatch = t;
    write(`${out.join('\n')}\n`);
  };
}
