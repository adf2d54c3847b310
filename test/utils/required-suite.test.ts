/**
 * test/utils/required-suite.ts: a suite whose service is missing skips with its reason, unless
 * ORCH_REQUIRE_SUITES names it (or `all`), where the file fails; and .ci/run sets it for every suite.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { postgresMissing, REQUIRE_SUITES_ENV, SUITE_NAMES, suiteSkip } from './required-suite.ts';

describe('required suites', () => {
  it('a missing service: skipped with its reason, unless required', () => {
    assert.equal(suiteSkip('ssh', null, {}), false);
    assert.equal(
      suiteSkip('ssh', 'no sshd (apt-get install -y openssh-server)', {}),
      'ssh suite skipped: no sshd (apt-get install -y openssh-server)',
    );
    assert.equal(suiteSkip('ssh', 'no sshd', { [REQUIRE_SUITES_ENV]: 'slurm' }), 'ssh suite skipped: no sshd');
    assert.throws(
      () => suiteSkip('ssh', 'no sshd', { [REQUIRE_SUITES_ENV]: 'slurm, ssh' }),
      /ssh suite skipped: no sshd — but ORCH_REQUIRE_SUITES=slurm, ssh requires it/,
    );
    assert.throws(() => suiteSkip('postgres', 'x', { [REQUIRE_SUITES_ENV]: 'all' }), /requires it/);
  });

  it('a port nothing listens on is a missing PostgreSQL, named with its address', () => {
    assert.match(
      postgresMissing('postgres://postgres@127.0.0.1:1/test') ?? '',
      /no PostgreSQL answers at 127\.0\.0\.1:1/,
    );
  });

  it('.ci/run requires every suite, and README lists each skip reason', () => {
    const ci = readFileSync('.ci/run', 'utf8');
    const line = /^export ORCH_REQUIRE_SUITES=(\S+)$/m.exec(ci);
    assert.ok(line, '.ci/run exports ORCH_REQUIRE_SUITES');
    assert.deepEqual(line[1]!.split(',').sort(), [...SUITE_NAMES].sort());
    const readme = readFileSync('README.md', 'utf8');
    for (const s of SUITE_NAMES)
      assert.match(readme, new RegExp(`\`${s}\` suite skipped`), `README names the ${s} skip`);
  });
});
