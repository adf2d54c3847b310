/**
 * Eight processes opening one fresh history database in the same instant (every `orch serve` of
 * a cluster starting together): every one opens it, the migrations run once. Without one lock
 * around the whole migration run (schema_version's own CREATE included) the losers of the race
 * died on PostgreSQL with `duplicate key value violates unique constraint
 * "pg_type_typname_nsp_index"`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { migrations } from '../../history/migrate.ts';
import { openHistory } from '../../history/open-history.ts';
import { BACKENDS, freshBackend } from '../utils/history-backends.ts';
import { waitFor } from '../utils/wait-for.ts';

const PROCESSES = 8;
// On PostgreSQL the race lost in about half the rounds: five make a pass of the old code unlikely (~1%).
const ROUNDS = { sqlite: 2, postgres: 5 } as const;

interface Opener {
  ready: boolean;
  out: string;
  err: string;
  exited: Promise<number | null>;
  go(): void;
}

function opener(env: Record<string, string>): Opener {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/history/open-on-go.ts'], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const o: Opener = {
    ready: false,
    out: '',
    err: '',
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
    go: () => child.stdin.write('go\n'),
  };
  createInterface({ input: child.stdout }).on('line', (l) => {
    if (l === 'ready') o.ready = true;
    else o.out += `${l}\n`;
  });
  child.stderr.on('data', (d: Buffer) => (o.err += d.toString()));
  return o;
}

for (const name of BACKENDS) {
  describe(`history migrations on ${name}, ${PROCESSES} processes at once`, { timeout: 120_000 }, () => {
    for (let round = 1; round <= ROUNDS[name]; round++) {
      it(`round ${round}: a fresh database, every process opens it, each migration recorded once`, async () => {
        const backend = await freshBackend(name);
        try {
          const procs = Array.from({ length: PROCESSES }, () => opener(backend.env));
          await waitFor('every opener ready', () => procs.every((p) => p.ready), { timeoutMs: 60_000 });
          for (const p of procs) p.go();
          const codes = await Promise.all(procs.map((p) => p.exited));
          const failed = procs.flatMap((p, i) => (codes[i] === 0 ? [] : [`#${i} exit ${codes[i]}: ${p.err.trim()}`]));
          assert.deepEqual(failed, [], `${failed.length} of ${PROCESSES} failed to open the history`);
          assert.ok(procs.every((p) => p.out === 'opened\n'));
          const store = await openHistory(backend.target);
          try {
            const rows = await store.db.all<{ version: number }>('SELECT version FROM schema_version ORDER BY version');
            assert.deepEqual(
              rows.map((r) => r.version),
              migrations().map((m) => m.version),
            );
          } finally {
            await store.close();
          }
        } finally {
          await backend.drop();
        }
      });
    }
  });
}
