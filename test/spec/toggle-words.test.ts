/**
 * A request toggle's string value that was meant as on or off is refused before any GPU time
 * (jobs/toggle-word.ts): `GRAPH: tru` read as off and ran the graph arm eager, so an A/B measured
 * eager against eager and said "inconclusive".
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SpecError } from '../../jobs/errors.ts';
import { parseConfigText } from '../../orchestrator/spec/load-spec.ts';

function spec(graphValue: string, { gates = 'gates: { identity: false }', eagerValue = 'false' } = {}): string {
  return [
    'name: words',
    'design: ab',
    'workload:',
    '  runtime: command',
    '  run: { cmd: python3 examples/torch-decode/decode.py, mode: resident }',
    '  toggles: { GRAPH: request, MODE: request }',
    'toggles: [GRAPH, MODE]',
    'arms:',
    `  - { name: eager, toggles: { GRAPH: ${eagerValue} } }`,
    `  - { name: graph, toggles: { GRAPH: ${graphValue} } }`,
    'reps: 4',
    gates,
  ].join('\n');
}

function problems(text: string): string[] {
  try {
    parseConfigText('words.yaml', text);
    return [];
  } catch (err) {
    if (!(err instanceof SpecError)) throw err;
    return err.issues.map((i) => `${i.line} ${i.path}: ${i.message} — ${i.fix ?? ''}`);
  }
}

describe('toggle words', () => {
  it('refuses a near miss of true or false, and YAML 1.1 boolean words, naming the line and the fix', () => {
    for (const [word, meant] of [
      ['tru', 'true'],
      ['ture', 'true'],
      ['"True"', 'true'],
      ['yes', 'true'],
      ['"1"', 'true'],
      ['flase', 'false'],
      ['no', 'false'],
    ] as const) {
      const found = problems(spec(word));
      assert.equal(found.length, 1, `${word}: ${found.join('; ')}`);
      assert.match(found[0] ?? '', /^10 arms\[1\]\.toggles\.GRAPH: toggle "GRAPH" is the string .* reads as off/);
      assert.match(found[0] ?? '', new RegExp(`did you mean ${meant}\\?`));
    }
  });

  it('accepts true, false and the strings a rank reads as on or off', () => {
    for (const word of ['true', 'on', '"true"']) assert.deepEqual(problems(spec(word)), [], word);
    for (const word of ['off', '"false"']) assert.deepEqual(problems(spec('true', { eagerValue: word })), [], word);
  });

  it("accepts a word of its own for a toggle of several values, which the identity gate's toggle cannot be", () => {
    assert.deepEqual(problems(spec('true, MODE: fast')), []);
    assert.deepEqual(problems(spec('flash')), []);
    const gated = problems(spec('flash', { gates: 'gates: { identity: { toggle: GRAPH, replays: 3 } }' }));
    assert.equal(gated.length, 1, gated.join('; '));
    assert.match(gated[0] ?? '', /turns capture on for the identity gate, so it is on or off; the string "flash"/);
  });
});
