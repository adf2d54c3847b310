/**
 * Where the nightly history lives: PostgreSQL when ORCH_DB_URL is set (a cluster: every
 * `orch serve` and the CLI share it), else SQLite in a file — ORCH_HISTORY_DB, or
 * $XDG_DATA_HOME/orch/history.sqlite (~/.local/share/orch/history.sqlite). Opening connects
 * and migrates; a database that cannot be reached is refused naming it (password masked) and
 * the fix.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { UserInputError } from '../jobs/errors.ts';
import { redactUrl } from '../jobs/redact.ts';
import { dbFault } from './db-fault.ts';
import { HistoryStore } from './history-store.ts';
import { migrate } from './migrate.ts';
import type { SqlDb } from './sql-db.ts';

export interface HistoryTarget {
  /** postgres://… or null for SQLite */
  url: string | null;
  /** the SQLite file when url is null */
  file: string;
  /** SQLite: how long a statement waits for another process's write lock (default SQLITE_BUSY_TIMEOUT_MS) */
  busyTimeoutMs?: number;
}

export function historyTargetFromEnv(env: NodeJS.ProcessEnv = process.env): HistoryTarget {
  const dataHome = env.XDG_DATA_HOME || join(homedir(), '.local', 'share');
  return { url: env.ORCH_DB_URL || null, file: env.ORCH_HISTORY_DB || join(dataHome, 'orch', 'history.sqlite') };
}

export function describeTarget(t: HistoryTarget): string {
  return t.url ? redactUrl(t.url) : t.file;
}

export async function openHistory(target: HistoryTarget = historyTargetFromEnv()): Promise<HistoryStore> {
  let db: SqlDb | null = null;
  try {
    if (target.url) {
      const { openPostgres } = await import('./postgres-db.ts');
      db = openPostgres(target.url);
    } else {
      const { openSqlite } = await import('./sqlite-db.ts');
      db = openSqlite(target.file, target.busyTimeoutMs);
    }
    await migrate(db);
    return new HistoryStore(db);
  } catch (err) {
    await db?.close().catch(() => undefined);
    if (err instanceof UserInputError) throw err;
    const fault = dbFault(err, { engine: target.url ? 'postgres' : 'sqlite', where: describeTarget(target) });
    throw new UserInputError(
      'HISTORY_UNREACHABLE',
      `cannot open the nightly history database ${describeTarget(target)}: it ${fault.reason}: ${fault.fix}`,
      {
        hint: target.url
          ? `${fault.fix}; unset ORCH_DB_URL to keep the history in a local SQLite file`
          : `${fault.fix}; or set ORCH_HISTORY_DB=/path/history.sqlite`,
        cause: err,
      },
    );
  }
}
