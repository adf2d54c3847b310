/**
 * Opening a faulty history database names what is wrong and the fix, from the driver's real
 * error: a SQLite file whose pages after the header are garbage (SQLITE_CORRUPT), a PostgreSQL
 * server without the database (3D000) and a port nobody listens on (ECONNREFUSED); the corrupt
 * file and the missing database are refused as not worth a retry, the refused connection is.
 */
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { dbFault } from '../../history/db-fault.ts';
import { openHistory } from '../../history/open-history.ts';
import { PG_ADMIN_URL } from '../utils/history-backends.ts';

async function refusal(
  target: Parameters<typeof openHistory>[0],
): Promise<Error & { code?: string; hint?: string; cause?: unknown }> {
  const err = await openHistory(target).then(
    () => null,
    (e: Error) => e,
  );
  assert.ok(err, 'opening was refused');
  return err;
}

describe('a faulty history database, opened', () => {
  it('a SQLite file with garbage pages: corrupt, move it aside and recover; not retried', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-history-corrupt-'));
    try {
      const file = join(dir, 'history.sqlite');
      await (await openHistory({ url: null, file })).close();
      const size = statSync(file).size;
      assert.ok(size > 4096, `the history has pages past the header: ${size} bytes`);
      const fd = openSync(file, 'r+');
      writeSync(fd, Buffer.alloc(size - 4096, 0xa5), 0, size - 4096, 4096);
      closeSync(fd);
      const err = await refusal({ url: null, file });
      assert.equal(err.code, 'HISTORY_UNREACHABLE');
      assert.ok(err.message.includes(`${file}: it is corrupt (SQLITE_CORRUPT`), err.message);
      assert.ok(err.message.includes(`mv ${file} ${file}.corrupt`), err.message);
      assert.equal(dbFault(err, { engine: 'sqlite', where: file }).transient, false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a PostgreSQL without the database: create it or fix the name; not retried', async () => {
    const url = new URL(PG_ADMIN_URL);
    url.pathname = '/orch_no_such_db_here';
    const err = await refusal({ url: url.toString(), file: '' });
    assert.match(err.message, /orch_no_such_db_here: it has no such database \(3D000: /);
    assert.match(err.hint ?? '', /createdb/);
    assert.equal(dbFault(err, { engine: 'postgres', where: '' }).transient, false);
  });

  it('a PostgreSQL port nobody listens on: does not answer, start it; worth a retry', async () => {
    const err = await refusal({ url: 'postgres://orch:pw-not-shown@127.0.0.1:1/history', file: '' });
    assert.match(err.message, /postgres:\/\/orch:\*\*\*@127\.0\.0\.1:1\/history: it does not answer \(ECONNREFUSED: /);
    assert.ok(!err.message.includes('pw-not-shown'), err.message);
    assert.equal(dbFault(err, { engine: 'postgres', where: '' }).transient, true);
  });
});
