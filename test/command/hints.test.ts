/**
 * Hints where the user is (issue 41), each through `orch submit` of a resident Python program
 * (test/fixtures/hint-programs/program.py) on this machine's CPU:
 * - a program that exits 0 before its hello never called serve(): said so, exit 2, one attempt;
 * - an arm setting a toggle the program did not declare: exit 2, naming the toggles it declared;
 * - reset() that rebinds its state: the identity gate's failure states the rule (write in place);
 * - a start failure that repeats the same exit and output: not retried again (2 attempts, not 3).
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { EXIT_CODES } from '../../orchestrator/report/outcome-exit-code.ts';
import { submitSpec } from '../utils/submit-spec.ts';

const PROGRAM = resolve('test/fixtures/hint-programs/program.py');

function spec(hint: string, toggle = 'GRAPH', identity = false): string {
  return `name: hint-${hint || 'none'}
design: ab
workload:
  runtime: command
  run: { cmd: python3 ${PROGRAM}, mode: resident, hello_timeout_s: 60, env: { HINT: "${hint}" } }
  toggles: { ${toggle}: request }
  warmup: 1
  steps: 3
toggles: [${toggle}]
arms:
  - { name: eager, toggles: { ${toggle}: false } }
  - { name: graph, toggles: { ${toggle}: true } }
reps: 2
gates: { identity: ${identity ? `{ toggle: ${toggle}, replays: 3 }` : 'false'}, aa: false }
`;
}

const env = { PYTHONDONTWRITEBYTECODE: '1', ORCH_CPU_CARDS: '1', REDIS_URL: '', ORCH_PREFIX: '' };

describe('hints where the user is', () => {
  it('a program that never called serve(): "did it call serve()?", exit 2, never retried', () => {
    const r = submitSpec('hint-noserve', spec('noserve'), env);
    assert.equal(r.code, 2, r.output.slice(0, 3000));
    assert.match(
      r.report,
      /RANK_NEVER_SERVED: rank 0 on card \S+ \(pid \d+\) exited with code 0, signal none; last error: set up; forgot to serve; it exited cleanly before its hello line: did it call serve\(\)\?/,
    );
    const starts = r.events.filter((e) => e.event.type === 'worker' && e.event.event === 'block-start');
    assert.equal(starts.length, 1, 'one attempt: a clean exit before hello is never transient');
  });

  it('an unknown toggle at run time: exit 2, naming the toggles the program declared', () => {
    const r = submitSpec('hint-toggle', spec('', 'GRAHP'), env);
    assert.equal(r.code, 2, r.output.slice(0, 3000));
    assert.match(
      r.report,
      /RANK_TOGGLE_UNKNOWN: toggles: the program "hint-program" \(orch_rank\.py [\d.]+\) does not understand "GRAHP"; it understands GRAPH/,
    );
  });

  it('reset() that rebinds its state: the identity gate says the in-place rule', () => {
    const r = submitSpec('hint-rebind', spec('rebind', 'GRAPH', true), env);
    assert.equal(r.code, EXIT_CODES.invalid, r.output.slice(0, 3000));
    assert.match(
      r.report,
      /identity gate failed: graph replay differs from eager .*The rule: a graph holds the addresses it was captured with, so reset\(\) and step\(\) must write state in place/,
    );
  });

  it('a start failure that repeats the same exit and output is not retried a third time', () => {
    const r = submitSpec('hint-crash', spec('crash'), env);
    assert.equal(r.code, EXIT_CODES.failed, r.output.slice(0, 3000));
    const starts = r.events.filter((e) => e.event.type === 'worker' && e.event.event === 'block-start');
    assert.equal(starts.length, 2, 'the second attempt ended as the first: no third');
    assert.match(
      r.report,
      /exited with code 3, signal none; last error: ImportError: no module named 'flash_attn'.*; the same exit and output as attempt 1: a failure that repeats is not retried/,
    );
  });
});
