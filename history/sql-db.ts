/**
 * The one seam between the history store and a database: SQLite in a file (sqlite-db.ts) or
 * PostgreSQL (postgres-db.ts). SQL is written once with `?` placeholders; the PostgreSQL side
 * numbers them. Statements are plain SQL both engines run (history/migrations/).
 */
export interface SqlDb {
  readonly engine: 'sqlite' | 'postgres';
  /** Where it is, for messages: the file, or the URL with its password masked. */
  readonly where: string;
  all<T>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Returns the number of rows changed. */
  run(sql: string, params?: readonly unknown[]): Promise<number>;
  /** Several statements, no parameters (a migration file). */
  script(sql: string): Promise<void>;
  /**
   * `fn` inside one transaction, committed when it resolves, rolled back when it throws.
   * `exclusive` takes the database's write lock first (migrations: one process at a time).
   */
  transaction<T>(fn: (tx: SqlDb) => Promise<T>, opts?: { exclusive?: boolean }): Promise<T>;
  close(): Promise<void>;
}
