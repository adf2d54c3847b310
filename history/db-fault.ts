/**
 * What a history database's error means and what to do about it: the one reading of SQLite
 * (better-sqlite3's SQLITE_* codes), PostgreSQL (SQLSTATE) and socket (errno) errors. A fault
 * is `transient` when waiting can fix it (the server restarts, another process ends its
 * transaction), so a write is tried again; otherwise retrying cannot help and the message says
 * what must change. Texts are redacted: a driver may echo its connection string.
 */
import { isErrorCode } from '../jobs/error-codes.ts';
import { redactText } from '../jobs/redact.ts';
import { sqliteLockHolders } from './sqlite-lock-holders.ts';

export interface DbFault {
  /** the driver's code (SQLITE_BUSY, 57P01, ECONNREFUSED) or null */
  code: string | null;
  transient: boolean;
  /** completes "the history database FILE|URL …": what is wrong, with the driver's words */
  reason: string;
  /** what to do */
  fix: string;
}

/** Connection-level errors without a SQLSTATE: the server stopped, restarted or never answered. */
const UNREACHABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
]);
const UNREACHABLE_TEXT =
  /Connection terminated|timeout exceeded when trying to connect|not queryable|Connection ended|connect ECONN/i;

export function dbFault(err: unknown, where: { engine: 'sqlite' | 'postgres'; where: string }): DbFault {
  const e = rootError(err);
  const code = typeof e.code === 'string' ? e.code : null;
  const said = redactText(`${code ? `${code}: ` : ''}${e.message}`);
  if (where.engine === 'sqlite') return sqliteFault(code, said, where.where);
  return postgresFault(code, said, e.message);
}

function sqliteFault(code: string | null, said: string, file: string): DbFault {
  const f = { code, transient: false };
  // An extended code (SQLITE_BUSY_SNAPSHOT, SQLITE_READONLY_DBMOVED) means what its primary does.
  switch (code?.split('_').slice(0, 2).join('_')) {
    case 'SQLITE_NOTADB':
      return {
        ...f,
        reason: `is not a SQLite database (${said})`,
        fix: `move it aside (mv ${file} ${file}.not-sqlite) and orch starts a fresh history there, or point ORCH_HISTORY_DB at the history file`,
      };
    case 'SQLITE_CORRUPT':
      return {
        ...f,
        reason: `is corrupt (${said})`,
        fix: `move it aside (mv ${file} ${file}.corrupt) and recover what it held with sqlite3 ${file}.corrupt .recover | sqlite3 ${file}`,
      };
    case 'SQLITE_READONLY':
      return {
        ...f,
        reason: `cannot be written (${said})`,
        fix: `make ${file}, its -wal and -shm files and its directory writable by the user running orch`,
      };
    case 'SQLITE_CANTOPEN':
      return {
        ...f,
        reason: `cannot be opened (${said})`,
        fix: 'make its directory exist and be writable, or set ORCH_HISTORY_DB=/path/history.sqlite',
      };
    case 'SQLITE_FULL':
      return { ...f, reason: `cannot grow: the disk is full (${said})`, fix: "free space on the history file's disk" };
    case 'SQLITE_BUSY':
    case 'SQLITE_LOCKED': {
      const holders = sqliteLockHolders(file);
      const who =
        holders.length > 0
          ? `: ${holders.map((h) => `pid ${h.pid}${h.command ? ` (${h.command})` : ''}`).join(', ')} holds its write lock`
          : ': another process holds its write lock';
      return {
        code,
        transient: true,
        reason: `is locked (${said})${who}`,
        fix: 'end that process or its open transaction (a sqlite3 shell inside BEGIN, a stuck orch); orch retries the write meanwhile',
      };
    }
    default:
      return { code, transient: true, reason: `failed (${said})`, fix: `check the disk and the file ${file}` };
  }
}

function postgresFault(code: string | null, said: string, message: string): DbFault {
  const sqlClass = code && /^[0-9A-Z]{5}$/.test(code) ? code.slice(0, 2) : null;
  const unreachable =
    (code !== null && UNREACHABLE_ERRNO.has(code)) ||
    sqlClass === '08' ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    (code === null && UNREACHABLE_TEXT.test(message));
  if (unreachable) {
    return {
      code,
      transient: true,
      reason: `does not answer (${said})`,
      fix: 'start PostgreSQL there, or fix the host and port in ORCH_DB_URL',
    };
  }
  if (sqlClass === '28')
    return {
      code,
      transient: false,
      reason: `refused the login (${said})`,
      fix: 'fix the user and password in ORCH_DB_URL (postgres://USER:PASSWORD@HOST:5432/DB)',
    };
  if (code === '3D000')
    return {
      code,
      transient: false,
      reason: `has no such database (${said})`,
      fix: 'create it (createdb NAME) or fix the database name in ORCH_DB_URL',
    };
  if (sqlClass === '42')
    return {
      code,
      transient: false,
      reason: `rejected orch's SQL (${said})`,
      fix: 'the schema is not the one this orch migrated: point ORCH_DB_URL at a database only orch writes',
    };
  // Out of resources (53), a serialization failure or deadlock (40), anything else: worth another try.
  return { code, transient: true, reason: `failed (${said})`, fix: 'see the PostgreSQL server log' };
}

/** The driver's error: the first in the cause chain whose code is not orch's own (openHistory wraps it). */
function rootError(err: unknown): { code?: unknown; message: string } {
  let e: unknown = err;
  for (let depth = 0; depth < 8 && e instanceof Error; depth++) {
    if (!isErrorCode((e as { code?: unknown }).code) || !(e.cause instanceof Error))
      return e as Error & { code?: unknown };
    e = e.cause;
  }
  return { message: String(e) };
}
