// `orch --help` lists every exit code orch can end with: each error kind's (jobs/error-codes.ts)
// and each verdict's (orchestrator/report/outcome-exit-code.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SIGNAL_EXIT_CODES } from '../../cli/exit-codes.ts';
import { KIND_POLICY } from '../../jobs/error-codes.ts';
import { DEFAULT_FAIL_ON, EXIT_CODES } from '../../orchestrator/report/outcome-exit-code.ts';
import { runOrch } from './run-orch.ts';

describe('exit codes in orch --help', () => {
  it('every code of the registry, the verdicts and the signals has a line', () => {
    const r = runOrch(['--help']);
    assert.equal(r.status, 0, r.stderr);
    const section = r.stdout.split('Exit codes:\n')[1]?.split('\n\n')[0] ?? '';
    const listed = new Set([...section.matchAll(/^ {2}(\d+) /gm)].map((m) => Number(m[1])));
    const expected = new Set([
      0,
      ...Object.values(KIND_POLICY).map((p) => p.exitCode),
      ...Object.values(EXIT_CODES),
      ...Object.values(SIGNAL_EXIT_CODES),
    ]);
    assert.deepEqual([...listed].sort(), [...expected].sort(), section);
    for (const outcome of Object.keys(EXIT_CODES)) assert.match(section, new RegExp(`outcome ${outcome}`));
    assert.match(
      section.replace(/\s+/g, ' '),
      new RegExp(`\\(default ${DEFAULT_FAIL_ON.join(', ')}\\), the others exit 0`),
    );
  });
});
