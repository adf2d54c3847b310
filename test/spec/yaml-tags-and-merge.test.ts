/**
 * Two YAML shapes a user may write and what orch says of them: a merge key (`<<: *shared`) is read
 * as YAML 1.1 defines it, so the merged spec is the spec written out (same hash); a tag orch does
 * not read (`!!binary`, a custom `!tag`) is refused by name with its file, line, path and fix,
 * never described as "a mapping" nor dropped in silence.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SpecError } from '../../jobs/errors.ts';
import { parseConfigText } from '../../orchestrator/spec/load-spec.ts';

const HEAD = ['name: tags', 'design: ab', 'workload:', '  runtime: native', '  kind: chain'];
const TAIL = ['toggles: [graph, pdl]', 'reps: 2', 'blocks: { count: 2 }'];

function hashOf(lines: string[]): string {
  const loaded = parseConfigText('m.yaml', [...HEAD, ...lines, ...TAIL].join('\n'));
  assert.equal(loaded.kind, 'experiment');
  return loaded.kind === 'experiment' ? loaded.hash : '';
}

function issuesOf(file: string, text: string): SpecError['issues'] {
  try {
    parseConfigText(file, text);
  } catch (err) {
    assert.ok(err instanceof SpecError, String(err));
    return err.issues;
  }
  assert.fail('the spec was accepted');
}

describe('YAML merge keys and tags', () => {
  it('a merge key is read: the arms it builds are the arms written out', () => {
    const merged = hashOf([
      'arms:',
      '  - { name: eager, toggles: &g { graph: false } }',
      '  - name: graph_pdl',
      '    toggles:',
      '      <<: *g',
      '      pdl: true',
    ]);
    const written = hashOf([
      'arms:',
      '  - { name: eager, toggles: { graph: false } }',
      '  - name: graph_pdl',
      '    toggles: { graph: false, pdl: true }',
    ]);
    assert.equal(merged, written);
  });

  it('!!binary: named as a tag orch does not read, with file, line, path and fix', () => {
    const text = [...HEAD, '  params: { kernels: !!binary aGVsbG8= }', ...TAIL].join('\n');
    const [issue, ...rest] = issuesOf('b.yaml', text);
    assert.equal(rest.length, 0);
    assert.deepEqual(
      { file: issue?.file, line: issue?.line, path: issue?.path },
      { file: 'b.yaml', line: 6, path: 'workload.params.kernels' },
    );
    assert.match(issue?.message ?? '', /^!!binary: a YAML tag orch does not read/);
    assert.doesNotMatch(issue?.message ?? '', /mapping$/);
    assert.match(issue?.fix ?? '', /remove !!binary and write the value as plain text or a number/);
  });

  it('a custom tag, which yaml would only warn of, is refused too; !!str stays allowed', () => {
    const [issue] = issuesOf(
      'c.yaml',
      [
        ...HEAD,
        'arms:',
        '  - { name: eager, toggles: {} }',
        '  - { name: g, toggles: { graph: !on true } }',
        ...TAIL,
      ].join('\n'),
    );
    assert.equal(issue?.line, 8);
    assert.equal(issue?.path, 'arms[1].toggles.graph');
    assert.match(issue?.message ?? '', /^!on: a YAML tag orch does not read/);
    assert.equal(
      hashOf(['arms:', '  - { name: eager, toggles: {} }', '  - { name: g, toggles: { graph: !!bool true } }']),
      hashOf(['arms:', '  - { name: eager, toggles: {} }', '  - { name: g, toggles: { graph: true } }']),
    );
  });
});
