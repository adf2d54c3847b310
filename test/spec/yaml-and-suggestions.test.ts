import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { didYouMean, levenshtein, suggestion } from '../../jobs/did-you-mean.ts';
import { SpecError } from '../../jobs/errors.ts';
import { formatPath, parseYamlSource } from '../../jobs/yaml-source.ts';
import { parseConfigText } from '../../orchestrator/spec/load-spec.ts';

describe('did-you-mean', () => {
  it('levenshtein counts single-character edits', () => {
    assert.equal(levenshtein('pld', 'pdl'), 2);
    assert.equal(levenshtein('graph', 'graph'), 0);
    assert.equal(levenshtein('', 'abc'), 3);
    assert.equal(levenshtein('kitten', 'sitting'), 3);
  });

  it('suggests a near candidate, or lists the allowed ones', () => {
    assert.equal(didYouMean('pld', ['graph', 'pdl', 'pin']), 'pdl');
    assert.equal(didYouMean('hostname', ['host', 'port', 'user']), 'host');
    assert.equal(didYouMean('zzzzzz', ['graph', 'pdl']), undefined);
    assert.equal(suggestion('zzzzzz', ['a', 'b']), 'expected one of "a", "b"');
    assert.equal(
      suggestion('gpu', ['auto', 'cuda', 'cpu'], true),
      'did you mean "cpu"? (one of "auto", "cuda", "cpu")',
    );
  });
});

describe('YAML lines', () => {
  const text = [
    'name: x',
    'toggles:',
    '  - graph',
    '  - pdl',
    'blocks: { count: 2,',
    '  ranks: 0 }',
    'arms:',
    '  - name: a',
    '    toggles: { graph: true }',
  ].join('\n');
  const source = parseYamlSource('f.yaml', text);

  it('maps dotted paths to the line of the key or item, block and flow style alike', () => {
    assert.equal(source.lineOf(['name']), 1);
    assert.equal(source.lineOf(['toggles', 1]), 4);
    assert.equal(source.lineOf(['blocks', 'ranks']), 6);
    assert.equal(source.lineOf(['arms', 0, 'toggles', 'graph']), 9);
    assert.equal(source.lineOf(['arms', 0, 'missing']), 8, 'a missing key points at its parent');
    assert.equal(formatPath(['arms', 0, 'toggles', 'graph']), 'arms[0].toggles.graph');
  });

  it('reports every problem of a spec at once', () => {
    const bad =
      'name: x\ndesign: leave-one-out\nworkload: { runtime: native, kind: decode }\ntoggles: [graph, pld]\nreps: 1\nfoo: 1\n';
    assert.throws(
      () => parseConfigText('b.yaml', bad),
      (err: unknown) =>
        err instanceof SpecError &&
        err.issues.map((i) => `${i.line} ${i.path}`).join(',') === '4 toggles[1],5 reps,6 foo',
    );
  });
});
