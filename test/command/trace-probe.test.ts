/**
 * The trace probe of a resident rank, end to end through `orch submit` (the embedded default):
 * examples/torch-decode/decode.py on this machine's pure-Python path, `design: probe` with an
 * eager and a graph arm. Each planned rep is one `trace` request; with no GPU the rank library
 * answers `source: none` with its reason, the probe record keeps it, and the report says "not
 * traced: <reason>" for each arm, never zeros. graphrt's chain runs on the same (cpu) card before
 * the program starts: the report gives its floor as graphrt's cpu backend's, not a GPU floor.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { submitSpec } from '../utils/submit-spec.ts';
import { torchDecodeSpec } from './torch-decode-spec.ts';

const SPEC = torchDecodeSpec({
  name: 'torch-decode-trace',
  design: 'probe',
  steps: 4,
  graphToggles: '{ GRAPH: true }',
  tail: `reps: 2
gates:
  identity: false
`,
});

describe('the trace probe of a resident Python rank through orch submit', () => {
  test('every arm traced by a trace request; no GPU: "not traced" with the reason, the chain floor not a GPU floor', () => {
    const r = submitSpec('torch-decode-trace', SPEC, { PYTHONDONTWRITEBYTECODE: '1' });
    assert.equal(r.code, 0, r.output);
    const traces = r.events.filter((e) => e.event.type === 'trace');
    assert.equal(traces.length, 4, 'one trace request per planned rep (2 arms × 2 reps)');
    assert.deepEqual([...new Set(traces.map((e) => e.event.arm))].sort(), ['eager', 'graph']);
    for (const t of traces) {
      assert.equal(t.event.trace.source, 'none', 'no GPU here: nothing traced');
      assert.match(t.event.trace.reason, /\S/);
    }
    assert.deepEqual(traces.map((t) => t.event.mode).sort(), ['eager', 'eager', 'graph', 'graph']);
    const hello = r.events.find((e) => e.event.type === 'hello');
    assert.equal(hello?.event.graph_node_floor?.source, 'graphrt-chain', JSON.stringify(hello?.event.graph_node_floor));
    assert.equal(hello?.event.graph_node_floor?.backend, 'cpu');
    assert.equal(r.events.filter((e) => e.event.type === 'rep').length, 0, 'a trace probe times no rep');
    const reason = traces[0]!.event.trace.reason as string;
    const cell = reason.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    assert.match(
      r.report,
      new RegExp(
        `\\| eager \\| eager \\| — \\| — \\| — \\| — \\| — \\| — \\| — \\| — \\| — \\| not traced: ${cell} \\|`,
      ),
    );
    assert.match(
      r.report,
      new RegExp(
        `\\| graph \\| graph \\| — \\| — \\| — \\| — \\| — \\| — \\| — \\| — \\| — \\| not traced: ${cell} \\|`,
      ),
    );
    assert.match(
      r.report,
      /Graph-node floor: \d+\.\d\d µs per node, measured by graphrt's chain on cpu emulation[^\n]*\(3 graph reps\): graphrt's cpu backend, not a GPU floor, so no estimate uses it\./,
    );
    assert.match(r.report, /4 trace rep\(s\) committed; not traced: /);
    const section = r.report.slice(
      r.report.indexOf('## Trace'),
      r.report.indexOf('\n## ', r.report.indexOf('## Trace') + 1),
    );
    assert.doesNotMatch(section, /\| 0(\.0+)?( %)? \|/, 'no zero stands for "not traced"');
    assert.equal(
      r.summary.analysis.verdict,
      'pass',
      'a probe that committed every trace rep passes; not traced is said, not failed',
    );
    assert.equal(r.summary.analysis.trace.floor.gpu, false);
    assert.equal(r.summary.analysis.trace.graph_check, null);
    assert.deepEqual(
      r.summary.analysis.trace.arms.map((a: { summary: unknown }) => a.summary),
      [null, null],
    );
    // summary.json (its analysis is report.json's) as docs/schemas says
    const ajv = new Ajv2020({ allErrors: true, strict: true });
    ajv.addKeyword({ keyword: 'unit', schemaType: 'string' });
    ajv.addSchema(JSON.parse(readFileSync('docs/schemas/report.schema.json', 'utf8')) as object);
    const valid = ajv.compile(JSON.parse(readFileSync('docs/schemas/summary.schema.json', 'utf8')) as object);
    assert.ok(valid(r.summary), JSON.stringify(valid.errors?.slice(0, 3)));
  });
});
