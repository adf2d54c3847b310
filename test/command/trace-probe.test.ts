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
import { CommandHelloSchema, CommandTraceSchema } from '../../jobs/command-line.ts';
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
    const traces = r.events.filter((e) => e.event.type === 'trace').map((e) => CommandTraceSchema.parse(e.event));
    assert.equal(traces.length, 4, 'one trace request per planned rep (2 arms × 2 reps)');
    assert.deepEqual([...new Set(traces.map((t) => t.arm))].sort(), ['eager', 'graph']);
    const reasons = traces.map((t) => (t.trace.source === 'none' ? t.trace.reason : `traced by ${t.trace.source}`));
    for (const reason of reasons) assert.match(reason, /^(?!traced by)\S/, 'no GPU here: nothing traced');
    assert.deepEqual(traces.map((t) => t.mode).sort(), ['eager', 'eager', 'graph', 'graph']);
    const hello = CommandHelloSchema.parse(r.events.find((e) => e.event.type === 'hello')?.event);
    assert.equal(hello.graph_node_floor?.source, 'graphrt-chain', JSON.stringify(hello.graph_node_floor));
    assert.equal(hello.graph_node_floor?.backend, 'cpu');
    // no kernel to trace on graphrt's cpu backend: said, never a number made up
    assert.deepEqual(hello.graph_node_floor?.source === 'graphrt-chain' && hello.graph_node_floor.kernel, {
      reason: "graphrt's cpu backend: no kernels to trace",
    });
    assert.equal(r.events.filter((e) => e.event.type === 'rep').length, 0, 'a trace probe times no rep');
    const reason = reasons[0] as string;
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
    const trace = r.summary.analysis.trace;
    assert.ok(trace, 'the trace section');
    assert.equal(trace.floor.source === 'graphrt-chain' ? trace.floor.gpu : trace.floor.source, false);
    assert.equal(trace.graph_check, null);
    assert.deepEqual(
      trace.arms.map((a) => a.summary),
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
