/**
 * Every malformed spec in test/fixtures/bad-specs/ is rejected through the real CLI with its
 * own message (the fixture's first line: `# expect: <what follows the file name>`), exit 2,
 * and no stack trace. All fixtures go through one `orch validate` process (plus one --json
 * run that reports each file's verdict), and a few alone to see each exits 2 by itself.
 *
 * Hostile inputs that cannot live in git (a character device, a FIFO, a directory, a 2 MiB
 * file, 20 000-deep nesting, a suite entry linking out of its directory) are made in a
 * temporary directory. Each case must cost the reader under a second and under 200 MB: the
 * CLI reports, per file, the time spent and the process's peak RSS (ORCH_VALIDATE_STATS=1,
 * the kernel's ru_maxrss), and the test prints the table it checks.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runOrch, STACK_FRAME } from './run-orch.ts';

const DIR = 'test/fixtures/bad-specs';
const fixtures = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .map((name) => {
    const file = join(DIR, name);
    const first = readFileSync(file, 'utf8').split('\n')[0] ?? '';
    const expect = /^# expect: (.*)$/.exec(first)?.[1];
    if (expect === undefined) throw new Error(`${file}: first line must be "# expect: <message fragment>"`);
    return { file, expect };
  });

describe('bad specs through `orch validate`', () => {
  it('has at least 80 fixtures, each with its own message', () => {
    assert.ok(fixtures.length >= 80, `${fixtures.length} fixtures`);
    assert.equal(new Set(fixtures.map((f) => f.expect)).size, fixtures.length, 'two fixtures expect the same message');
  });

  it('all at once: exit 2, every file reported at its line with its message, no stack', () => {
    const r = runOrch(['validate', ...fixtures.map((f) => f.file)]);
    assert.equal(r.status, 2, r.stderr);
    assert.doesNotMatch(r.stderr, STACK_FRAME);
    assert.equal(r.stdout, '', 'no fixture may validate');
    const lines = r.stderr.split('\n');
    for (const { file, expect } of fixtures) {
      assert.ok(
        lines.some((l) => l.startsWith(`${file}${expect}`)),
        `${file}: no line "${file}${expect}" in\n${lines.filter((l) => l.startsWith(file)).join('\n')}`,
      );
    }
    assert.match(r.stderr, new RegExp(`problems in ${fixtures.length} files`));
  });

  it('--json: every file is reported invalid with its issues', () => {
    const r = runOrch(['validate', '--json', ...fixtures.map((f) => f.file)]);
    assert.equal(r.status, 2);
    const out = JSON.parse(r.stdout) as { ok: boolean; files: { file: string; ok: boolean; issues: unknown[] }[] };
    assert.equal(out.ok, false);
    assert.deepEqual(
      out.files.map((f) => f.file),
      fixtures.map((f) => f.file),
    );
    for (const f of out.files) assert.ok(!f.ok && f.issues.length > 0, f.file);
  });

  for (const name of ['yaml-syntax.yaml', 'unknown-toggle.yaml', 'command-no-metric.yaml']) {
    it(`alone: ${name} exits 2`, () => {
      const fixture = fixtures.find((f) => f.file.endsWith(name));
      assert.ok(fixture);
      const r = runOrch(['validate', fixture.file]);
      assert.equal(r.status, 2);
      assert.ok(r.stderr.startsWith(`${fixture.file}${fixture.expect}\n`), r.stderr);
      assert.doesNotMatch(r.stderr, STACK_FRAME);
    });
  }
});

/** A generated case: the path handed to `orch validate` and the message after it. */
interface Generated {
  name: string;
  file: string;
  expect: string;
}

/** The hostile inputs git cannot hold, made under `dir` (the outside file for the link case too). */
function generatedCases(dir: string): Generated[] {
  const at = (name: string) => join(dir, name);
  const fifo = at('fifo.yaml');
  const made = spawnSync('mkfifo', [fifo]);
  assert.equal(made.status, 0, `mkfifo: ${made.stderr}`);
  mkdirSync(at('a-directory.yaml'));
  writeFileSync(at('two-mib.yaml'), `name: big\n# ${'x'.repeat(2 * 1024 * 1024)}\n`);
  writeFileSync(at('deep-block.yaml'), `${'- '.repeat(20_000)}x\n`);
  writeFileSync(at('deep-flow.yaml'), `name: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`);
  // The deepest nesting by indentation that fits the size bound: one more space per level.
  writeFileSync(
    at('deep-indent.yaml'),
    `name: x\n${Array.from({ length: 1400 }, (_, i) => `${' '.repeat(i)}k${i}:\n`).join('')}`,
  );
  mkdirSync(at('suite'));
  mkdirSync(at('outside'));
  writeFileSync(at('outside/secret.yaml'), 'secret-line-that-must-not-be-echoed: 1\n');
  symlinkSync(at('outside/secret.yaml'), at('suite/link.yaml'));
  writeFileSync(
    at('suite/suite.yaml'),
    'kind: suite\nname: nightly\nschedule: { cron: "0 2 * * *" }\nexperiments:\n  - link.yaml\n',
  );
  return [
    { name: '/dev/zero', file: '/dev/zero', expect: ' (root): is a character device, not a regular file' },
    { name: 'FIFO', file: fifo, expect: ' (root): is a FIFO (named pipe), not a regular file' },
    { name: 'directory', file: at('a-directory.yaml'), expect: ' (root): is a directory, not a regular file' },
    {
      name: '2 MiB file',
      file: at('two-mib.yaml'),
      expect: ' (root): is 2097165 bytes; a spec file is at most 1048576 bytes',
    },
    {
      name: '20 000-deep block nesting',
      file: at('deep-block.yaml'),
      expect: ':1 (root): nesting deeper than 64 levels',
    },
    {
      name: '20 000-deep flow nesting',
      file: at('deep-flow.yaml'),
      expect: ':1 (root): nesting deeper than 64 levels',
    },
    {
      name: '1 400-deep indentation (1 MB)',
      file: at('deep-indent.yaml'),
      expect: ':66 (root): nesting deeper than 64 levels',
    },
    {
      name: 'suite entry linking out',
      file: at('suite/suite.yaml'),
      expect: ':5 experiments[0]: "link.yaml" is a link to a file outside the suite\'s directory',
    },
    { name: 'missing file', file: at('missing.yaml'), expect: ' (root): cannot read the file (ENOENT)' },
  ];
}

interface Stats {
  file: string;
  ms: number;
  cpu_ms: number;
  maxrss_kb: number;
}

/** `orch validate` with ORCH_VALIDATE_STATS=1: its result and one stats line per file. */
function validateWithStats(files: string[]): { status: number | null; stderr: string; stats: Stats[] } {
  const r = spawnSync(process.execPath, ['bin/orch.mjs', 'validate', ...files], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, ORCH_VALIDATE_STATS: '1' },
  });
  if (r.error) throw r.error;
  const stats = r.stderr
    .split('\n')
    .filter((l) => l.startsWith('orch-validate-stats '))
    .map((l) => JSON.parse(l.slice('orch-validate-stats '.length)) as Stats);
  return { status: r.status, stderr: r.stderr, stats };
}

// The bound is on the reader's CPU time (the table prints wall time too): on a shared, loaded
// machine wall time measures the neighbours, CPU time what the case costs.
const MAX_MS = 1000;
const MAX_RSS_KB = 200 * 1024;

function printTable(title: string, rows: { name: string; ms: number; cpu_ms: number; maxrss_kb: number }[]): void {
  const width = Math.max(...rows.map((r) => r.name.length), 4);
  const lines = [
    `${title}`,
    `  ${'case'.padEnd(width)}  ${'ms'.padStart(8)}  ${'cpu ms'.padStart(8)}  ${'peak RSS MB'.padStart(11)}`,
  ];
  for (const r of rows)
    lines.push(
      `  ${r.name.padEnd(width)}  ${r.ms.toFixed(1).padStart(8)}  ${r.cpu_ms.toFixed(1).padStart(8)}  ${(r.maxrss_kb / 1024).toFixed(1).padStart(11)}`,
    );
  console.log(lines.join('\n'));
}

describe('hostile inputs through `orch validate`: refused, fast and small', () => {
  let dir = '';
  let cases: Generated[] = [];
  // Nothing but the temporary directory may be written: the repository's root and the fixtures
  // directory list the same entries after the run as before it.
  const watched = ['.', DIR];
  let listings: string[][] = [];

  before(() => {
    listings = watched.map((d) => readdirSync(d).sort());
    dir = mkdtempSync(join(tmpdir(), 'orch-bad-specs-'));
    cases = generatedCases(dir);
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(
      watched.map((d) => readdirSync(d).sort()),
      listings,
      'a test wrote outside its temporary directory',
    );
  });

  it('each generated case exits 2 with its own message and no stack, and nothing outside is echoed', () => {
    const r = runOrch(['validate', ...cases.map((c) => c.file)]);
    assert.equal(r.status, 2, r.stderr);
    assert.doesNotMatch(r.stderr, STACK_FRAME);
    assert.doesNotMatch(r.stderr, /internal error/);
    const lines = r.stderr.split('\n');
    for (const c of cases) {
      assert.ok(
        lines.some((l) => l.startsWith(`${c.file}${c.expect}`)),
        `${c.name}: no line "${c.file}${c.expect}" in\n${r.stderr}`,
      );
    }
    assert.doesNotMatch(r.stderr, /secret-line-that-must-not-be-echoed/);
  });

  it('suite entries outside the suite directory are not read: no line of /etc/passwd in the output', () => {
    const r = runOrch(['validate', join(DIR, 'suite-escape.yaml'), join(DIR, 'suite-absolute-outside.yaml')]);
    assert.equal(r.status, 2);
    assert.doesNotMatch(r.stderr, /root:.*:0:0:/);
  });

  it(`every case, fixture or generated, takes under ${MAX_MS} ms and the reader stays under 200 MB (one process)`, () => {
    const all = [...fixtures.map((f) => ({ name: f.file.slice(DIR.length + 1), file: f.file })), ...cases];
    const r = validateWithStats(all.map((c) => c.file));
    assert.equal(r.status, 2);
    assert.equal(r.stats.length, all.length, r.stderr);
    // maxrss is the process's peak so far: each row bounds that case and every case before it.
    printTable(
      'orch validate, all cases in one process (peak RSS: the process so far, startup included)',
      r.stats.map((s, i) => ({ ...s, name: all[i]!.name })),
    );
    for (const [i, s] of r.stats.entries()) {
      assert.ok(s.cpu_ms < MAX_MS, `${all[i]!.name}: ${s.cpu_ms} ms of CPU`);
      assert.ok(s.maxrss_kb < MAX_RSS_KB, `${all[i]!.name}: peak RSS ${s.maxrss_kb} KB`);
    }
  });

  it('each hostile case alone, in its own process: under a second and 200 MB', () => {
    const hostile = [
      ...cases,
      ...[
        'billion-laughs.yaml',
        'binary.yaml',
        'name-too-long.yaml',
        'reps-too-many.yaml',
        'blocks-count-too-many.yaml',
      ].map((n) => ({ name: n, file: join(DIR, n) })),
    ];
    const rows = hostile.map((c) => {
      const r = validateWithStats([c.file]);
      assert.equal(r.status, 2, `${c.name}: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, STACK_FRAME);
      assert.equal(r.stats.length, 1, r.stderr);
      return { ...r.stats[0]!, name: c.name };
    });
    printTable('orch validate, one process per hostile case (peak RSS of that process, startup included)', rows);
    for (const row of rows) {
      assert.ok(row.cpu_ms < MAX_MS, `${row.name}: ${row.cpu_ms} ms of CPU`);
      assert.ok(row.maxrss_kb < MAX_RSS_KB, `${row.name}: peak RSS ${row.maxrss_kb} KB`);
    }
  });
});
