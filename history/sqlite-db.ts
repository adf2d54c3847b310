/**
 * SqlDb over better-sqlite3 (synchronous, one connection). Transactions are serialised through
 * a promise chain: an async `fn` must never interleave its statements with another caller's on
 * the one connection. WAL + busy_timeout let `orch serve`, `orch status` and `orch nightly`
 * open the same file at once.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { SqlDb } from './sql-db.ts';

type Db = InstanceType<typeof Database>;

/** How long one statement waits for another process's write lock before it fails SQLITE_BUSY. */
export const SQLITE_BUSY_TIMEOUT_MS = 5000;

export function openSqlite(file: string, busyTimeoutMs = SQLITE_BUSY_TIMEOUT_MS): SqlDb {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const db = new Database(file);
  try {
    // The timeout first: switching a fresh file to WAL takes a lock another opener may hold.
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
    db.pragma('journal_mode = WAL');
  } catch (err) {
    // A file that is not SQLite opens lazily and fails here: the handle must not leak.
    db.close();
    throw err;
  }
  db.pragma('foreign_keys = ON');
  return new SqliteDb(db, file);
}

class SqliteDb implements SqlDb {
  readonly engine = 'sqlite' as const;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly db: Db,
    readonly where: string,
    private readonly inTx = false,
  ) {}

  async all<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    await this.idle();
    return this.db.prepare(sql).all(...params.map(toSqlite)) as T[];
  }

  async run(sql: string, params: readonly unknown[] = []): Promise<number> {
    await this.idle();
    return this.db.prepare(sql).run(...params.map(toSqlite)).changes;
  }

  async script(sql: string): Promise<void> {
    await this.idle();
    this.db.exec(sql);
  }

  transaction<T>(fn: (tx: SqlDb) => Promise<T>, opts: { exclusive?: boolean } = {}): Promise<T> {
    const tx = new SqliteDb(this.db, this.where, true);
    const next = this.chain.then(async () => {
      this.db.exec(opts.exclusive ? 'BEGIN EXCLUSIVE' : 'BEGIN IMMEDIATE');
      try {
        const out = await fn(tx);
        this.db.exec('COMMIT');
        return out;
      } catch (err) {
        this.db.exec('ROLLBACK');
        throw err;
      }
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  async close(): Promise<void> {
    await this.chain;
    this.db.close();
  }

  /** Statements outside a transaction wait for the running one (the connection is shared). */
  private async idle(): Promise<void> {
    if (!this.inTx) await this.chain;
  }
}

function toSqlite(v: unknown): unknown {
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v === undefined ? null : v;
}
