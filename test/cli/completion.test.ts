// `orch completion`: yargs' completion script for orch, and the completions it asks for.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runOrch } from './run-orch.ts';

describe('orch completion', () => {
  it('prints a bash completion script that calls orch back', () => {
    const r = runOrch(['completion']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^###-begin-orch-completions-###/m);
    assert.match(r.stdout, /--get-yargs-completions/);
    assert.match(r.stdout, /complete .* orch/);
  });

  it('completes command names and options', () => {
    const cmds = runOrch(['--get-yargs-completions', 'orch', 'va']);
    assert.equal(cmds.status, 0, cmds.stderr);
    assert.match(cmds.stdout, /^validate$/m);
    const opts = runOrch(['--get-yargs-completions', 'orch', 'submit', '--']);
    assert.match(opts.stdout, /^--no-wait$|^--watch$/m);
  });
});
