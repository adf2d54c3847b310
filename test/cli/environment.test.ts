// Every environment variable the tree reads (process.env.X outside test/) is in the one table
// of cli/environment.ts, which `orch --help` prints, and in README.md.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ENVIRONMENT } from '../../cli/environment.ts';
import { runOrch } from './run-orch.ts';

// bench/ is not orch: each benchmark's own BENCH_* knobs are listed in its header, not in orch's table
const SKIP = new Set(['node_modules', 'test', 'dist', '.git', 'native', 'results', 'bench']);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (SKIP.has(name) || name.startsWith('.')) return [];
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return /\.(ts|mjs|js)$/.test(name) ? [p] : [];
  });
}

/** `process.env.X`, `process.env['X']`, `process.env["X"]` */
const USE = /process\.env(?:\.([A-Z_][A-Z0-9_]*)|\[\s*['"]([A-Z_][A-Z0-9_]*)['"]\s*\])/g;

describe('environment variables', () => {
  const used = new Map<string, string>();
  for (const f of sources('.')) for (const m of readFileSync(f, 'utf8').matchAll(USE)) used.set(m[1] ?? m[2]!, f);
  const listed = new Set(ENVIRONMENT.map((v) => v.name));

  it('the tree reads some (the grep works)', () => {
    assert.ok(used.has('REDIS_URL') && used.has('ORCH_PREFIX'), [...used.keys()].join(' '));
  });

  it('each one read is in the table of cli/environment.ts', () => {
    assert.deepEqual(
      [...used].filter(([v]) => !listed.has(v)).map(([v, f]) => `${v} (${f})`),
      [],
    );
  });

  it('orch --help and README.md list every one of the table', () => {
    const help = runOrch(['--help']).stdout;
    const readme = readFileSync('README.md', 'utf8');
    for (const v of listed) {
      assert.match(help, new RegExp(`^ {2}${v} `, 'm'), `--help lacks ${v}`);
      assert.match(readme, new RegExp(`\`${v}\``), `README.md lacks ${v}`);
    }
  });
});
