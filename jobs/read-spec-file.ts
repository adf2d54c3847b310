/**
 * Reading a config file before any YAML is parsed: only a regular file (never a device, a FIFO or
 * a directory: /dev/zero would be read forever, a FIFO would block the reader), at most
 * `orch.spec_file.bytes`, and UTF-8 text (a binary file is named as such, never echoed). Each
 * refusal is a SpecError naming the file, so `orch validate` lists it with the others.
 */
import { closeSync, constants, fstatSync, openSync, type Stats, statSync } from 'node:fs';
import { SpecError } from './errors.ts';
import { LIMITS, LIMITS_FILE } from './limits.ts';
import { kindOf, readAtMost } from './regular-file.ts';

export const SPEC_FILE_MAX_BYTES = LIMITS.orch.spec_file.bytes;

/** The text of `file`, or a SpecError saying why it is not a spec file. */
export function readSpecFile(file: string): string {
  const refuse = (message: string, fix: string, line: number | null = null): never => {
    throw new SpecError([{ file, line, path: '', message, fix }]);
  };
  const failed = (err: unknown): never =>
    refuse(`cannot read the file (${(err as NodeJS.ErrnoException).code ?? String(err)})`, 'check the path');
  // stat first, so a device or a FIFO is refused without being opened at all.
  let before: Stats;
  try {
    before = statSync(file);
  } catch (err) {
    return failed(err);
  }
  checkRegular(before, refuse);
  let fd: number;
  try {
    // O_NONBLOCK: should the path become a FIFO between the stat and the open, the open and the
    // read return at once instead of waiting for a writer.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    return failed(err);
  }
  try {
    checkRegular(fstatSync(fd), refuse);
    const bytes = readAtMost(fd, SPEC_FILE_MAX_BYTES + 1);
    if (bytes.length > SPEC_FILE_MAX_BYTES) tooLarge(bytes.length, refuse);
    return decodeText(bytes, refuse);
  } catch (err) {
    if (err instanceof SpecError) throw err;
    return failed(err);
  } finally {
    closeSync(fd);
  }
}

type Refuse = (message: string, fix: string, line?: number) => never;

function checkRegular(stat: Stats, refuse: Refuse): void {
  if (!stat.isFile()) refuse(`is ${kindOf(stat)}, not a regular file`, 'pass the path of a YAML spec file');
  if (stat.size > SPEC_FILE_MAX_BYTES) tooLarge(stat.size, refuse);
}

function tooLarge(size: number, refuse: Refuse): never {
  return refuse(
    `is ${size > SPEC_FILE_MAX_BYTES + 1 ? size : `more than ${SPEC_FILE_MAX_BYTES}`} bytes; a spec file is at most ${SPEC_FILE_MAX_BYTES} bytes`,
    `check the path (a spec is a few KB); the bound is ${LIMITS_FILE} orch.spec_file.bytes`,
  );
}

function decodeText(bytes: Buffer, refuse: Refuse): string {
  const nul = bytes.indexOf(0);
  if (nul >= 0)
    refuse(`is a binary file (a NUL byte at offset ${nul}), not YAML text`, 'pass the path of a YAML spec file');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const at = firstInvalidUtf8(bytes);
    const line = bytes.subarray(0, at).reduce((n, b) => n + (b === 0x0a ? 1 : 0), 1);
    const column = at - (bytes.lastIndexOf(0x0a, at - 1) + 1) + 1;
    const byte = bytes[at]!.toString(16).padStart(2, '0');
    return refuse(
      `is not UTF-8 text: byte 0x${byte} at offset ${at} (line ${line}, column ${column}) is not valid UTF-8 (a binary file, or another encoding such as Latin-1)`,
      'save the file as UTF-8 (iconv -f latin1 -t utf-8), or replace that character',
      line,
    );
  }
}

/** The offset of the first byte that does not begin or continue a well-formed UTF-8 sequence (RFC 3629). */
function firstInvalidUtf8(bytes: Buffer): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const [n, lo, hi] =
      b < 0x80
        ? [0, 0, 0]
        : b >= 0xc2 && b <= 0xdf
          ? [1, 0x80, 0xbf]
          : b === 0xe0
            ? [2, 0xa0, 0xbf]
            : b === 0xed
              ? [2, 0x80, 0x9f]
              : b >= 0xe1 && b <= 0xef
                ? [2, 0x80, 0xbf]
                : b === 0xf0
                  ? [3, 0x90, 0xbf]
                  : b >= 0xf1 && b <= 0xf3
                    ? [3, 0x80, 0xbf]
                    : b === 0xf4
                      ? [3, 0x80, 0x8f]
                      : [-1, 0, 0];
    if (n < 0) return i;
    for (let k = 1; k <= n; k++) {
      const c = bytes[i + k];
      // the sequence's lead byte is what is out of place when a continuation is missing
      if (c === undefined || c < (k === 1 ? lo : 0x80) || c > (k === 1 ? hi : 0xbf)) return i;
    }
    i += n + 1;
  }
  return 0;
}
