/**
 * Applies history/migrations/NNN_name.sql in order, each once, all pending ones in one
 * transaction under the database's write lock (PostgreSQL: an advisory lock held to COMMIT;
 * SQLite: BEGIN EXCLUSIVE), schema_version's own creation included, so any number of processes
 * may open a fresh database at once; `schema_version` records which ran. A database
 * newer than this orch (a version it has no file for) is refused rather than written to.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UserInputError } from '../jobs/errors.ts';
import type { SqlDb } from './sql-db.ts';

const DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function migrations(dir = DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d+_[\w-]+\.sql$/.test(f))
    .map((f) => ({ version: Number(f.split('_')[0]), name: f, sql: readFileSync(join(dir, f), 'utf8') }))
    .sort((a, b) => a.version - b.version);
}

/** Returns the versions applied now (empty when the schema was current). */
export async function migrate(db: SqlDb, all = migrations()): Promise<number[]> {
  return db.transaction(
    async (tx) => {
      // Inside the lock: PostgreSQL's CREATE TABLE IF NOT EXISTS is not atomic, and two processes
      // creating the table at once fail the loser on a duplicate key in pg_type.
      await tx.script(
        'CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)',
      );
      const [row] = await tx.all<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_version');
      const current = row?.v ?? 0;
      const latest = all.at(-1)?.version ?? 0;
      if (current > latest) {
        throw new UserInputError(
          'HISTORY_SCHEMA_NEWER',
          `the history database ${db.where} is at schema version ${current}; this orch knows up to ${latest}`,
          {
            hint: 'run the newer orch that migrated it, or point ORCH_DB_URL / ORCH_HISTORY_DB elsewhere',
          },
        );
      }
      const applied: number[] = [];
      for (const m of all.filter((m) => m.version > current)) {
        await tx.script(m.sql);
        await tx.run('INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)', [
          m.version,
          m.name,
          Date.now(),
        ]);
        applied.push(m.version);
      }
      return applied;
    },
    { exclusive: true },
  );
}
