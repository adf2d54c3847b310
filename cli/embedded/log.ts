/**
 * The pino logger of the orchestrator's processes, on stderr (stdout is the command's output),
 * level from ORCH_LOG (default `warn` for one-shot commands, `info` for `orch serve`), bound to
 * the process role. Format from ORCH_LOG_FORMAT: `json` (JSON lines, for log collectors) or
 * `pretty` (one line per record for a person: level, message, the error's code and message, no
 * stack); unset, pretty on a terminal and JSON anywhere else. Either way a stack only at
 * ORCH_LOG=debug or for a bug in orch (errSerializer).
 *
 * A record's message, error and fields may quote a rank (a protocol fault quoting its stdout line,
 * a reason) or a record read back from Redis: the pretty line escapes each of them
 * (jobs/rank-text.ts), the one place every record passes on its way to a terminal. The JSON lines
 * are for a collector, which reads them as data (pino escapes the C0 controls there; C1 and bidi
 * characters pass as JSON allows).
 */
import { type DestinationStream, type Logger, pino } from 'pino';
import { z } from 'zod';
import { kindOf } from '../../jobs/error-codes.ts';
import { escapeRankText } from '../../jobs/rank-text.ts';
import { terminalSafeJson } from '../terminal/json-line.ts';

export type LogFormat = 'json' | 'pretty';

export function logFormat(env = process.env.ORCH_LOG_FORMAT, tty = process.stderr.isTTY === true): LogFormat {
  if (env === 'json' || env === 'pretty') return env;
  return tty ? 'pretty' : 'json';
}

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };
/** A pino record: a JSON object, its `err` when that is one (a line that is not one is printed as it came). */
const PinoRecordSchema = z.looseObject({
  err: z.looseObject({ code: z.unknown(), message: z.unknown() }).optional().catch(undefined),
});
/** record fields that are the envelope, not the story */
const ENVELOPE = new Set(['level', 'time', 'pid', 'hostname', 'role', 'msg', 'err', 'v']);

/** One pino JSON record as one human line: `orch worker warn: msg (CODE: message) key=value`. */
export function prettyRecord(json: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return escapeRankText(json.trimEnd());
  }
  const record = PinoRecordSchema.safeParse(parsed);
  if (!record.success) return escapeRankText(json.trimEnd());
  const r = record.data;
  const level = LEVELS[Number(r.level)] ?? escapeRankText(String(r.level));
  const err = r.err;
  const why =
    err && typeof err.message === 'string'
      ? ` (${typeof err.code === 'string' ? `${escapeRankText(err.code)}: ` : ''}${escapeRankText(err.message.split('\n')[0] ?? '')})`
      : '';
  const extra = Object.entries(r)
    .filter(([k]) => !ENVELOPE.has(k))
    .map(([k, v]) => escapeRankText(`${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`))
    .join(' ');
  return `orch ${escapeRankText(String(r.role ?? ''))} ${level}: ${escapeRankText(String(r.msg ?? ''))}${why}${extra ? `  ${extra}` : ''}`;
}

/** JSON records as pino writes them, with the characters a terminal acts on escaped (a record quotes a program's or Redis's text). */
function jsonStderr(): DestinationStream {
  return { write: (line: string) => void process.stderr.write(terminalSafeJson(line)) };
}

function prettyStderr(): DestinationStream {
  return { write: (line: string) => void process.stderr.write(`${prettyRecord(line)}\n`) };
}

/**
 * An error as a log record's `err`: its type, code, message (and cause's), and the stack only at
 * ORCH_LOG=debug (or trace) or for a bug in orch: an expected failure (a rank that exited, a
 * user's input) is one line, not a JS stack inside a JSON line.
 */
export function errSerializer(debug: boolean): (e: Error) => Record<string, unknown> {
  return (e) => {
    const s = pino.stdSerializers.err(e) as unknown as Record<string, unknown>;
    if (debug || kindOf(e) === 'bug') return s;
    const strip = (o: unknown): void => {
      if (o === null || typeof o !== 'object') return;
      delete (o as Record<string, unknown>).stack;
      strip((o as Record<string, unknown>).cause);
    };
    strip(s);
    return s;
  };
}

export function orchLog(role: string, level = process.env.ORCH_LOG ?? 'warn'): Logger {
  const debug = level === 'debug' || level === 'trace';
  return pino(
    { level, base: { role, pid: process.pid }, serializers: { err: errSerializer(debug) } },
    logFormat() === 'json' ? jsonStderr() : prettyStderr(),
  );
}
