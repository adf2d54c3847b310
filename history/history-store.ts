/**
 * The nightly history: runs (one per suite and scheduled time, the idempotency key) and their
 * rows (one per spec and comparison). Everything a nightly writes or `orch nightly status|history`
 * and `orch status` read goes through here; the SQL is the same for SQLite and PostgreSQL.
 */
import { z } from 'zod';
import { parseStored } from '../jobs/parse-stored.ts';
import type { SqlDb } from './sql-db.ts';

export type RunState = 'running' | 'done' | 'invalid' | 'failed';

export const SubmittedSpecSchema = z.object({
  file: z.string(),
  experiment: z.string(),
});
export type SubmittedSpec = z.infer<typeof SubmittedSpecSchema>;

/** The JSON columns, each through its schema as it is read back. */
const SubmittedSpecsSchema = z.array(SubmittedSpecSchema);
const NamesSchema = z.array(z.string());
const CommitsSchema = z.record(z.string(), z.string());

export interface NightlyRun {
  id: string;
  suite: string;
  scheduled_at: number;
  started_at: number;
  heartbeat_at: number;
  ended_at: number | null;
  state: RunState;
  error: string | null;
  experiments: SubmittedSpec[];
  alerts: number;
  orch_version: string | null;
  orch_commit: string | null;
  /** orch's checkout had uncommitted changes to tracked files; null: unknown (no checkout, or recorded before this was) */
  orch_dirty: boolean | null;
  serve_host: string | null;
}

export interface NightlyRow {
  run_id: string;
  suite: string;
  scheduled_at: number;
  spec_file: string;
  spec_name: string | null;
  spec_hash: string | null;
  experiment: string | null;
  experiment_state: string;
  results_dir: string | null;
  arm: string;
  reference: string;
  metric: string | null;
  verdict: string | null;
  change: number | null;
  ci_low: number | null;
  ci_high: number | null;
  /** the paired comparison's two-sided p (history/migrations/004_p_value.sql); null without one */
  p_value: number | null;
  arm_value: number | null;
  reference_value: number | null;
  aa_pass: boolean | null;
  gates_pass: boolean | null;
  gates: string | null;
  finding: string | null;
  cards: string[];
  hosts: string[];
  commits: Record<string, string>;
  /** a paired entry's pairing (paired against the last good commit, or unpaired A/A); null for other entries */
  pairing: string | null;
  /** a confirmation run's row: the experiment whose suspected regression it ran again (history/migrations/005_confirms.sql); null for the night's own rows */
  confirms: string | null;
  /** the Slurm allocation the experiment's workers ran in (history/migrations/006_slurm.sql); null when none ran under Slurm */
  slurm: SlurmPlacement | null;
  /** why tonight's absolute numbers were not judged against the nights before (another Slurm node), or that they were because the spec allows it; null: no node change */
  node_change: string | null;
  error: string | null;
}

/** Where an experiment's workers ran under Slurm: distinct values, sorted. */
export interface SlurmPlacement {
  jobs: string[];
  /** the nodes the workers ran on (not the allocation's whole node list) */
  nodes: string[];
  partitions: string[];
}

const ROW_COLUMNS = [
  'run_id',
  'suite',
  'scheduled_at',
  'spec_file',
  'spec_name',
  'spec_hash',
  'experiment',
  'experiment_state',
  'results_dir',
  'arm',
  'reference',
  'metric',
  'verdict',
  'change',
  'ci_low',
  'ci_high',
  'p_value',
  'arm_value',
  'reference_value',
  'aa_pass',
  'gates_pass',
  'gates',
  'finding',
  'cards',
  'hosts',
  'commits',
  'pairing',
  'confirms',
  'node_change',
  'error',
] as const satisfies readonly (keyof NightlyRow)[];

/** `slurm` rests in three columns, one list each. */
const SLURM_COLUMNS = {
  slurm_jobs: 'jobs',
  slurm_nodes: 'nodes',
  slurm_partitions: 'partitions',
} as const satisfies Record<string, keyof SlurmPlacement>;

export function runId(suite: string, scheduledAt: number): string {
  return `${suite}@${new Date(scheduledAt).toISOString()}`;
}

export class HistoryStore {
  constructor(readonly db: SqlDb) {}

  get where(): string {
    return this.db.where;
  }

  /**
   * Inserts the run for (suite, scheduledAt) unless one exists. `claimed` is false when another
   * attempt (a stalled job retried, a second `orch serve`) got there first: then `run` is that
   * attempt's row and nothing may be submitted again.
   */
  async claimRun(r: {
    suite: string;
    scheduledAt: number;
    orchVersion: string | null;
    orchCommit: string | null;
    /** absent: unknown */
    orchDirty?: boolean | null;
    serveHost: string;
  }): Promise<{ claimed: boolean; run: NightlyRun }> {
    const id = runId(r.suite, r.scheduledAt);
    const now = Date.now();
    const changed = await this.db.run(
      `INSERT INTO nightly_runs (id, suite, scheduled_at, started_at, heartbeat_at, state, orch_version, orch_commit, orch_dirty, serve_host)
       VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      [id, r.suite, r.scheduledAt, now, now, r.orchVersion, r.orchCommit, toColumn(r.orchDirty), r.serveHost],
    );
    return { claimed: changed === 1, run: (await this.run(id))! };
  }

  async run(id: string): Promise<NightlyRun | null> {
    const [row] = await this.db.all<RawRun>('SELECT * FROM nightly_runs WHERE id = ?', [id]);
    return row ? toRun(row) : null;
  }

  async setExperiments(id: string, experiments: SubmittedSpec[]): Promise<void> {
    await this.db.run('UPDATE nightly_runs SET experiments = ?, heartbeat_at = ? WHERE id = ?', [
      JSON.stringify(experiments),
      Date.now(),
      id,
    ]);
  }

  async heartbeat(id: string): Promise<void> {
    await this.db.run('UPDATE nightly_runs SET heartbeat_at = ? WHERE id = ?', [Date.now(), id]);
  }

  /** Records the rows and ends the run, in one transaction: a run is never half recorded. */
  async finishRun(
    id: string,
    end: { state: Exclude<RunState, 'running'>; error: string | null; alerts: number; rows: NightlyRow[] },
  ): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.run('DELETE FROM nightly_rows WHERE run_id = ?', [id]);
      for (const row of end.rows) {
        const columns = [...ROW_COLUMNS, ...Object.keys(SLURM_COLUMNS)];
        await tx.run(`INSERT INTO nightly_rows (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`, [
          // the key column: '' for the night's own rows (a primary key holds no NULL)
          ...ROW_COLUMNS.map((c) => (c === 'confirms' ? (row.confirms ?? '') : toColumn(row[c]))),
          ...Object.values(SLURM_COLUMNS).map((k) => (row.slurm === null ? null : toColumn(row.slurm[k]))),
        ]);
      }
      await tx.run(
        'UPDATE nightly_runs SET state = ?, error = ?, alerts = ?, ended_at = ?, heartbeat_at = ? WHERE id = ?',
        [end.state, end.error, end.alerts, Date.now(), Date.now(), id],
      );
    });
  }

  /** A suite's runs still `running` whose heartbeat is older than `staleBefore`, oldest first. */
  async stalled(suite: string, staleBefore: number, limit = 50): Promise<NightlyRun[]> {
    const rows = await this.db.all<RawRun>(
      "SELECT * FROM nightly_runs WHERE suite = ? AND state = 'running' AND heartbeat_at < ? ORDER BY scheduled_at LIMIT ?",
      [suite, staleBefore, limit],
    );
    return rows.map(toRun);
  }

  /**
   * Ends a run as failed unless its attempt came back: only while it is still `running` with a
   * heartbeat older than `staleBefore` (a late finishRun of a live attempt is never overwritten).
   * True when it was ended here.
   */
  async endStale(id: string, staleBefore: number, error: string): Promise<boolean> {
    const now = Date.now();
    return (
      (await this.db.run(
        "UPDATE nightly_runs SET state = 'failed', error = ?, ended_at = ? WHERE id = ? AND state = 'running' AND heartbeat_at < ?",
        [error, now, id, staleBefore],
      )) === 1
    );
  }

  /** The last `limit` runs, newest first; of one suite or of all. */
  async runs(suite: string | null, limit = 20): Promise<NightlyRun[]> {
    const rows =
      suite === null
        ? await this.db.all<RawRun>('SELECT * FROM nightly_runs ORDER BY scheduled_at DESC LIMIT ?', [limit])
        : await this.db.all<RawRun>('SELECT * FROM nightly_runs WHERE suite = ? ORDER BY scheduled_at DESC LIMIT ?', [
            suite,
            limit,
          ]);
    return rows.map(toRun);
  }

  /** A suite's rows, oldest first (the order a series is read in). */
  async rows(suite: string, limit = 1000): Promise<NightlyRow[]> {
    const rows = await this.db.all<RawRow>(
      'SELECT * FROM (SELECT * FROM nightly_rows WHERE suite = ? ORDER BY scheduled_at DESC LIMIT ?) t ORDER BY scheduled_at, spec_file, arm, reference, confirms',
      [suite, limit],
    );
    return rows.map(toRow);
  }

  /** Every suite with a recorded run, by name. */
  async suites(): Promise<string[]> {
    return (await this.db.all<{ suite: string }>('SELECT DISTINCT suite FROM nightly_runs ORDER BY suite')).map(
      (r) => r.suite,
    );
  }

  /** When each suite's last successful (done) run ended, epoch ms. */
  async lastSuccess(): Promise<{ suite: string; at: number }[]> {
    const rows = await this.db.all<{ suite: string; at: number | string }>(
      "SELECT suite, MAX(ended_at) AS at FROM nightly_runs WHERE state = 'done' GROUP BY suite ORDER BY suite",
    );
    // PostgreSQL returns a BIGINT aggregate as a string.
    return rows.map((r) => ({ suite: r.suite, at: Number(r.at) }));
  }

  /**
   * Runs that need a look: failed or invalid since `since`, and running ones whose heartbeat is
   * older than `staleMs` (their `orch serve` died and no retry took them over).
   */
  async troubled(since: number, staleMs: number): Promise<(NightlyRun & { stalled: boolean })[]> {
    const rows = await this.db.all<RawRun>(
      `SELECT * FROM nightly_runs WHERE (state IN ('failed', 'invalid') AND scheduled_at >= ?) OR (state = 'running' AND heartbeat_at < ?)
       ORDER BY scheduled_at DESC LIMIT 50`,
      [since, Date.now() - staleMs],
    );
    return rows.map((r) => ({ ...toRun(r), stalled: r.state === 'running' }));
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

type RawRun = Omit<NightlyRun, 'experiments' | 'orch_dirty'> & { experiments: string; orch_dirty: number | null };
type RawRow = Omit<NightlyRow, 'aa_pass' | 'gates_pass' | 'cards' | 'hosts' | 'commits' | 'slurm'> &
  Record<keyof typeof SLURM_COLUMNS, string | null> & {
    aa_pass: number | null;
    gates_pass: number | null;
    cards: string | null;
    hosts: string | null;
    commits: string | null;
  };

function toRun(r: RawRun): NightlyRun {
  return {
    ...r,
    experiments: parseStored(SubmittedSpecsSchema, r.experiments || '[]', `nightly_runs ${r.id} column experiments`),
    orch_dirty: bool(r.orch_dirty),
  };
}

function bool(v: number | null | undefined): boolean | null {
  return v === null || v === undefined ? null : Number(v) === 1;
}

function toRow(raw: RawRow): NightlyRow {
  const { slurm_jobs, slurm_nodes, slurm_partitions, ...r } = raw;
  const list = (text: string, column: string) => parseStored(NamesSchema, text, `${rowAt(raw)} column ${column}`);
  return {
    ...r,
    slurm:
      slurm_nodes === null || slurm_nodes === undefined
        ? null
        : {
            jobs: list(slurm_jobs ?? '[]', 'slurm_jobs'),
            nodes: list(slurm_nodes, 'slurm_nodes'),
            partitions: list(slurm_partitions ?? '[]', 'slurm_partitions'),
          },
    aa_pass: bool(r.aa_pass),
    gates_pass: bool(r.gates_pass),
    cards: list(r.cards ?? '[]', 'cards'),
    hosts: list(r.hosts ?? '[]', 'hosts'),
    commits: parseStored(CommitsSchema, r.commits ?? '{}', `${rowAt(r)} column commits`),
    confirms: r.confirms === '' ? null : r.confirms,
    node_change: r.node_change ?? null,
  };
}

/** Where a nightly row rests, for an error about one of its columns. */
function rowAt(r: Pick<RawRow, 'run_id' | 'spec_file' | 'arm'>): string {
  return `nightly_rows of run ${r.run_id} (spec ${r.spec_file}, arm ${r.arm || '-'})`;
}

function toColumn(v: unknown): unknown {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (Array.isArray(v) || (typeof v === 'object' && v !== null)) return JSON.stringify(v);
  return v ?? null;
}
