/**
 * docs/ARCHITECTURE.md's "Boundaries", checked against the import graph of the code as it is:
 * jobs/ imports nothing of orch, store/ and history/ only jobs/, orchestrator/ and worker/ never
 * each other (what crosses between them is a job on a queue and keys in Redis), only cli/
 * composes them all; and no circle, neither between orchestrator/'s rooms nor between files.
 * A planted import against an arrow makes it fail (the last test).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cycles, folderEdges, importGraph } from './import-graph.ts';

/** Which top folders each may import, as docs/ARCHITECTURE.md draws them. */
const ALLOWED: Record<string, readonly string[]> = {
  jobs: [],
  store: ['jobs'],
  history: ['jobs'],
  orchestrator: ['jobs', 'store', 'history'],
  worker: ['jobs', 'store'],
  cli: ['jobs', 'store', 'history', 'orchestrator', 'worker'],
};

function violations(graph: Map<string, string[]>): string[] {
  const out: string[] = [];
  for (const [file, targets] of graph) {
    const from = file.split('/')[0]!;
    for (const t of targets) {
      const to = t.split('/')[0]!;
      if (to !== from && to in ALLOWED && !ALLOWED[from]!.includes(to)) out.push(`${file} imports ${t}`);
    }
  }
  return out;
}

describe('import boundaries', () => {
  const graph = importGraph();

  test('every import follows an arrow of docs/ARCHITECTURE.md', () => {
    assert.deepEqual(violations(graph), []);
    const top = folderEdges(graph, 1);
    console.log(`# top folders: ${[...top].map(([f, to]) => `${f} → ${[...to].sort().join(', ')}`).join('; ')}`);
  });

  test("no circle between orchestrator/'s rooms", () => {
    const rooms = folderEdges(graph, 2, 'orchestrator');
    console.log(
      `# orchestrator rooms: ${[...rooms]
        .map(
          ([f, to]) =>
            `${f.slice(13)} → ${[...to]
              .map((t) => t.slice(13))
              .sort()
              .join(', ')}`,
        )
        .join('; ')}`,
    );
    assert.deepEqual(cycles(rooms), []);
  });

  test('no circle between production files', () => {
    const files = new Map([...graph].map(([f, t]) => [f, new Set(t)]));
    assert.deepEqual(cycles(files), []);
  });

  test('the check fails on a planted import against an arrow and on a planted circle', () => {
    const planted = new Map(graph);
    planted.set('orchestrator/planted.ts', ['worker/worker.ts']);
    assert.deepEqual(violations(planted), ['orchestrator/planted.ts imports worker/worker.ts']);
    const circle = new Map([
      ['a.ts', new Set(['b.ts'])],
      ['b.ts', new Set(['a.ts'])],
    ]);
    assert.deepEqual(cycles(circle), [['a.ts', 'b.ts']]);
  });
});
