/**
 * Splits a child's output stream into lines, at most `maxBytes` each. A longer line is reported
 * once through `onTooLong` with its first bytes, and the rest of it is discarded up to its newline:
 * a writer that never ends its line cannot make the worker buffer without bound.
 */
import type { Readable } from 'node:stream';
import { QUOTED_LINE_BYTES } from '../jobs/line-limit.ts';

export interface LineReaderHandlers {
  onLine: (line: string) => void;
  /** `head`: the line's first bytes, as text */
  onTooLong: (head: string) => void;
}

export function readLines(stream: Readable, maxBytes: number, h: LineReaderHandlers): void {
  let parts: Buffer[] = [];
  let size = 0;
  let discarding = false;
  const emit = () => {
    const line = Buffer.concat(parts, size).toString('utf8');
    parts = [];
    size = 0;
    h.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  };
  const take = (piece: Buffer) => {
    if (discarding || piece.length === 0) return;
    if (size + piece.length > maxBytes) {
      const head = Buffer.concat([...parts, piece])
        .subarray(0, QUOTED_LINE_BYTES)
        .toString('utf8');
      parts = [];
      size = 0;
      discarding = true;
      h.onTooLong(head);
      return;
    }
    parts.push(piece);
    size += piece.length;
  };
  stream.on('data', (chunk: Buffer) => {
    let from = 0;
    for (let nl = chunk.indexOf(10, from); nl >= 0; nl = chunk.indexOf(10, from)) {
      take(chunk.subarray(from, nl));
      if (discarding) discarding = false;
      else emit();
      from = nl + 1;
    }
    take(chunk.subarray(from));
  });
  stream.on('end', () => {
    if (!discarding && size > 0) emit();
  });
}
