/**
 * The two history backends every history test runs against: a SQLite file in a fresh temporary
 * directory, and a fresh database on the PostgreSQL server at 127.0.0.1:5432 (trust auth, user
 * postgres, database `test` to create it from), dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import type { HistoryTarget } from '../../history/open-history.ts';
import { postgresMissing, suiteSkip } from './required-suite.ts';

export const PG_ADMIN_URL = process.env.ORCH_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface Backend {
  name: 'sqlite' | 'postgres';
  target: HistoryTarget;
  /** the env that points orch processes at this backend */
  env: Record<string, string>;
  drop(): Promise<void>;
}

export type BackendName = Backend['name'];
/** Why PostgreSQL is skipped here (test/utils/required-suite.ts), or false. */
export const POSTGRES_SKIP = suiteSkip('postgres', postgresMissing(PG_ADMIN_URL));
export const BACKENDS: BackendName[] = POSTGRES_SKIP === false ? ['sqlite', 'postgres'] : ['sqlite'];
/**
 * One backend for an end-to-end nightly test that takes minutes a run: `name` where it runs here,
 * else SQLite. The two long nightly files split the backends between them (paired-nightly on
 * PostgreSQL, nightly-regression on SQLite), so each backend runs a whole nightly loop once per
 * `npm test` and the shorter nightly files and test/history/ run both; running both long files on
 * both took 150 s of CI's 45 minutes for the same loop again.
 */
export function oneBackend(name: BackendName): BackendName[] {
  return BACKENDS.includes(name) ? [name] : ['sqlite'];
}
// The file that runs the backends says so, where a reader of its output looks.
if (POSTGRES_SKIP !== false) test(POSTGRES_SKIP, { skip: POSTGRES_SKIP }, () => {});

export async function freshBackend(name: BackendName): Promise<Backend> {
  if (name === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'orch-history-'));
    const file = join(dir, 'history.sqlite');
    return {
      name,
      target: { url: null, file },
      env: { ORCH_HISTORY_DB: file },
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const db = `orch_t_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${db}`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${db}`;
  return {
    name,
    target: { url: url.toString(), file: '' },
    env: { ORCH_DB_URL: url.toString() },
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
