/**
 * workload.run.cwd: a relative one that climbs out of where it is resolved (`../x`, `a/../../x`)
 * is refused before anything runs, with the file, line, path and fix; one that stays inside
 * (`a/../b`, `sub`) is accepted.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SpecError } from '../../jobs/errors.ts';
import { parseConfigText } from '../../orchestrator/spec/load-spec.ts';

function spec(cwd: string): string {
  return [
    'name: cwd',
    'design: ab',
    'workload:',
    '  runtime: command',
    '  run:',
    '    cmd: ./bench',
    `    cwd: ${JSON.stringify(cwd)}`,
    '  toggles: { GRAPH: { env: GRAPH, on: "1", off: "0" } }',
    '  metric_source: { format: jsonl, field: ms }',
    'toggles: [GRAPH]',
    'arms:',
    '  - { name: eager, toggles: { GRAPH: false } }',
    '  - { name: graph, toggles: { GRAPH: true } }',
    'reps: 2',
    'gates: { identity: false }',
    'metric: { name: ms, better: lower }',
  ].join('\n');
}

describe('workload.run.cwd', () => {
  for (const cwd of ['../x', '..', 'a/../../x']) {
    it(`"${cwd}" is refused: it climbs out of the directory it is resolved in`, () => {
      assert.throws(
        () => parseConfigText('cwd.yaml', spec(cwd)),
        (err: unknown) => {
          assert.ok(err instanceof SpecError, String(err));
          assert.equal(err.issues.length, 1, err.message);
          const [issue] = err.issues;
          assert.deepEqual(
            { file: issue?.file, line: issue?.line, path: issue?.path },
            { file: 'cwd.yaml', line: 7, path: 'workload.run.cwd' },
          );
          assert.match(
            issue?.message ?? '',
            new RegExp(`^"${cwd.replaceAll('.', '\\.')}" climbs out of the directory a relative cwd is resolved in`),
          );
          assert.match(issue?.fix ?? '', /name a directory inside it .* or give an absolute path/);
          return true;
        },
      );
    });
  }

  for (const cwd of ['sub', 'a/../b', './x']) {
    it(`"${cwd}" stays inside and is accepted`, () => {
      assert.equal(parseConfigText('cwd.yaml', spec(cwd)).kind, 'experiment');
    });
  }
});
