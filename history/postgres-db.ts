/**
 * SqlDb over a `pg` pool. BIGINT (epoch milliseconds) comes back as a number, not a string;
 * `?` placeholders become $1, $2, … (the history's SQL never has a `?` inside a literal).
 */
import pg from 'pg';
import { redactUrl } from '../jobs/redact.ts';
import type { SqlDb } from './sql-db.ts';

const INT8 = 20;

export function openPostgres(url: string): SqlDb {
  const pool = new pg.Pool({
    connectionString: url,
    max: 4,
    connectionTimeoutMillis: 5000,
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8 ? Number : pg.types.getTypeParser(oid, format as 'text')) as never,
    },
  });
  // An idle client's error (the server restarted) must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  return new PostgresDb(pool, redactUrl(url));
}

function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

class PostgresDb implements SqlDb {
  readonly engine = 'postgres' as const;

  constructor(
    private readonly q: pg.Pool | pg.PoolClient,
    readonly where: string,
  ) {}

  async all<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    return (await this.q.query(numbered(sql), [...params])).rows as T[];
  }

  async run(sql: string, params: readonly unknown[] = []): Promise<number> {
    return (await this.q.query(numbered(sql), [...params])).rowCount ?? 0;
  }

  async script(sql: string): Promise<void> {
    await this.q.query(sql);
  }

  async transaction<T>(fn: (tx: SqlDb) => Promise<T>, opts: { exclusive?: boolean } = {}): Promise<T> {
    const client = 'connect' in this.q && !('release' in this.q) ? await (this.q as pg.Pool).connect() : null;
    if (!client) return fn(this);
    try {
      await client.query('BEGIN');
      // One lock id for the history's exclusive sections (migrations), held to COMMIT.
      if (opts.exclusive) await client.query('SELECT pg_advisory_xact_lock(727001)');
      const out = await fn(new PostgresDb(client, this.where));
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    if ('end' in this.q) await (this.q as pg.Pool).end();
  }
}
