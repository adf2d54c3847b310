// `orch --help` and `orch validate` start without the heavy packages: each command loads Redis,
// queues, ssh, logging, HTTP and statistics inside its handler (cli/main.ts). A static import of
// one of them in any command module makes this fail.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const HEAVY = ['bullmq', 'ioredis', 'ssh2', 'pino', 'fastify', '@stdlib/', 'prom-client', '@bull-board/'];

function packagesLoaded(args: string[]): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'orch-lazy-'));
  try {
    const file = join(dir, 'packages.txt');
    const r = spawnSync(
      process.execPath,
      ['--import', './test/fixtures/record-packages.mjs', 'bin/orch.mjs', ...args],
      {
        encoding: 'utf8',
        env: { ...process.env, RECORD_PACKAGES: file },
      },
    );
    assert.equal(r.status, 0, r.stderr);
    return [...new Set(readFileSync(file, 'utf8').split('\n').filter(Boolean))];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('heavy packages load lazily', () => {
  // --help does without zod too (the schemas, the version line's package.json): validate needs it.
  for (const [args, heavy] of [
    [['--help'], [...HEAVY, 'zod']],
    [['validate', 'configs/leave-one-out.yaml', 'configs/nightly.yaml'], HEAVY],
  ] as const) {
    it(`orch ${args.join(' ')}`, () => {
      const loaded = packagesLoaded([...args]);
      assert.ok(loaded.includes('yargs'), `the recorder saw nothing: ${loaded.join(' ')}`);
      assert.deepEqual(
        loaded.filter((p) =>
          heavy.some((h) => p === h || (h.endsWith('/') && p.startsWith(h)) || p.startsWith(`${h}/`)),
        ),
        [],
      );
    });
  }
});
