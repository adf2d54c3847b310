/**
 * Writes records as JSON lines a chunk at a time: one string of a huge experiment's every event
 * overruns V8's string limit (`RangeError: Invalid string length`), so no more than CHUNK_CHARS
 * of it is ever held as one string. The file is its owner's alone (0600), like every results file.
 */
import { closeSync, fchmodSync, openSync, writeSync } from 'node:fs';

const CHUNK_CHARS = 1 << 20;

export function writeJsonLines(file: string, records: Iterable<unknown>): void {
  const fd = openSync(file, 'w', 0o600);
  try {
    fchmodSync(fd, 0o600);
    let chunk = '';
    for (const r of records) {
      chunk += `${JSON.stringify(r)}\n`;
      if (chunk.length >= CHUNK_CHARS) {
        writeSync(fd, chunk);
        chunk = '';
      }
    }
    if (chunk) writeSync(fd, chunk);
  } finally {
    closeSync(fd);
  }
}
