// Under --json every failing command prints exactly one JSON object on stdout — ok: false and
// error { code, kind, message, hint, exit_code } (validate's issues as an array) — and its exit
// code is the one the object names. Every command of cli/commands/index.ts needs a case here.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { commands } from '../../cli/commands/index.ts';
import { type JsonError, jsonError } from '../../cli/print-error.ts';
import { runOrch } from './run-orch.ts';

const dir = mkdtempSync(join(tmpdir(), 'orch-json-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const bad = join(dir, 'bad.yaml');
writeFileSync(
  bad,
  'name: x\ndesign: leave-one-out\nworkload: { runtime: native, kind: decode }\ntoggles: [graph, pdl]\nreps: 0\ncolour: red\n',
);
const noCluster = { REDIS_URL: '', ORCH_PREFIX: '' };

/** One failing command line per command, and the code its error must carry. */
const CASES: Record<string, { args: string[]; code: string }> = {
  validate: { args: ['validate', 'configs/ab.yaml', bad], code: 'SPEC_INVALID' },
  plan: { args: ['plan', join(dir, 'missing.yaml')], code: 'SPEC_INVALID' },
  submit: { args: ['submit', 'test/fixtures/specs/tiny-ab.yaml', '--no-wait'], code: 'NO_WAIT_EMBEDDED' },
  serve: { args: ['serve'], code: 'NO_REDIS_URL' },
  status: { args: ['status'], code: 'NO_REDIS_URL' },
  watch: { args: ['watch', 'x-1'], code: 'NO_REDIS_URL' },
  cancel: { args: ['cancel', 'x-1'], code: 'NO_REDIS_URL' },
  report: { args: ['report', 'x-1'], code: 'NO_REDIS_URL' },
  worker: { args: ['worker'], code: 'REDIS_URL_MISSING' },
  hosts: { args: ['hosts', 'up', bad], code: 'SPEC_INVALID' },
  nightly: { args: ['nightly', 'install', bad], code: 'SPEC_INVALID' },
  dashboard: { args: ['dashboard'], code: 'NO_REDIS_URL' },
  trace: { args: ['trace', 'x-1'], code: 'NO_SUCH_EXPERIMENT' },
  compare: { args: ['compare', dir, dir], code: 'RESULTS_DIR_INVALID' },
  prune: { args: ['prune', '--older-than', '7d'], code: 'NO_REDIS_URL' },
  slurm: { args: ['slurm', 'status', '--job', '1'], code: 'NO_REDIS_URL' },
  '(unknown flag)': { args: ['validate', 'configs/ab.yaml', '--colour'], code: 'CLI_USAGE' },
  '(none)': { args: [], code: 'CLI_USAGE' },
  '(unknown)': { args: ['valdate'], code: 'CLI_USAGE' },
};

function parseOne(stdout: string): JsonError {
  const lines = stdout.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `stdout holds more than one line:\n${stdout}`);
  return JSON.parse(lines[0]!) as JsonError;
}

describe('--json errors', () => {
  it('every command has a case', () => {
    const names = commands.map((c) => c.command.split(' ')[0]!);
    assert.deepEqual(
      names.filter((n) => !(n in CASES)),
      [],
    );
  });

  // a case whose command is not registered (yet) is left out; the test above asks the reverse
  const registered = new Set(commands.map((c) => c.command.split(' ')[0]!));
  for (const [name, c] of Object.entries(CASES).filter(([n]) => n.startsWith('(') || registered.has(n))) {
    it(`${name}: one JSON object with code ${c.code}, exit code as it says`, () => {
      const r = runOrch([...c.args, '--json'], noCluster);
      const e = parseOne(r.stdout);
      assert.equal(e.ok, false);
      assert.equal(e.error.code, c.code, r.stdout);
      assert.equal(typeof e.error.message, 'string');
      assert.ok('hint' in e.error);
      assert.equal(r.status, e.error.exit_code);
      assert.equal(r.status, 2);
    });
  }

  it('validate: the issues as an array, and every file with its result', () => {
    const r = runOrch(['validate', '--json', 'configs/ab.yaml', bad]);
    const e = parseOne(r.stdout) as JsonError & { files: { file: string; ok: boolean }[] };
    assert.ok(Array.isArray(e.error.issues) && e.error.issues.length >= 2, r.stdout);
    for (const i of e.error.issues!) assert.equal(i.file, bad);
    assert.deepEqual(
      e.files.map((f) => [f.file, f.ok]),
      [
        ['configs/ab.yaml', true],
        [bad, false],
      ],
    );
    assert.equal(r.stderr, '');
  });

  it('an error nothing classifies is a bug: code INTERNAL, exit 1, a hint to report it', () => {
    const e = jsonError(new TypeError('x is undefined'));
    assert.equal(e.error.code, 'INTERNAL');
    assert.equal(e.error.kind, 'bug');
    assert.equal(e.error.exit_code, 1);
    assert.match(e.error.hint!, /bug in orch/);
  });
});
