/**
 * A user's Python program as a resident rank, end to end through `orch submit` (the embedded
 * default): examples/torch-decode/decode.py serving the rank protocol through orch_rank, on this
 * machine's pure-Python path (no PyTorch here; the same library, protocol and gate as on a GPU).
 * One process per card for the block, every planned rep measured once, the identity gate judged
 * from the program's hashes — and the planted bug it exists for (STALE_INPUT: the step's input not
 * copied before replay, seed 000 §8.1's stale address) caught at replay 2, naming the output,
 * which makes the experiment INVALID (exit 5).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CommandHelloSchema } from '../../jobs/command-line.ts';
import { type Submitted, submitSpec } from '../utils/submit-spec.ts';
import { torchDecodeSpec } from './torch-decode-spec.ts';

function spec(name: string, graphToggles: string): string {
  return torchDecodeSpec({
    name,
    design: 'ab',
    steps: 6,
    graphToggles,
    tail: `reps: 3
blocks: { count: 2 }
gates:
  identity: { toggle: GRAPH, replays: 7 }
  aa: true
`,
  });
}

type Run = Submitted;

const submit = (name: string, graphToggles: string): Run =>
  submitSpec(name, spec(name, graphToggles), { PYTHONDONTWRITEBYTECODE: '1' });

const ofType = (r: Run, type: string) => r.events.filter((e) => e.event.type === type);

describe('a Python program as a resident rank through orch submit', () => {
  test('eager vs graph + A/A: one process per card for the block, every rep measured, the identity gate passed', () => {
    const r = submit('torch-decode-cpu', '{ GRAPH: true }');
    assert.notEqual(r.code, 5, r.output);
    assert.ok([0, 3, 4].includes(r.code ?? -1), r.output);
    const hellos = ofType(r, 'hello');
    assert.equal(hellos.length, 2, 'one program per block (one card each): started once, not per rep');
    assert.deepEqual(
      hellos.map((h) => CommandHelloSchema.parse(h.event).program).map((p) => [p?.name, p?.timing]),
      [
        ['torch-decode', 'host-clock'],
        ['torch-decode', 'host-clock'],
      ],
    );
    const reps = ofType(r, 'rep');
    assert.equal(reps.length, 2 * 3 * 3, 'every planned rep measured once');
    for (const block of [0, 1]) {
      const own = reps.filter((e) => e.block === block);
      assert.ok(
        own.every((e) => e.event.pid === undefined),
        "rep lines are the command runtime's, not the program's",
      );
      const graph = own.filter((e) => e.event.mode === 'graph');
      assert.equal(graph.length, 3, `block ${block}: the graph arm replayed`);
      assert.ok(
        graph.every((e) => e.event.graph === 'reused'),
        'the gate captured the graph the reps replay',
      );
    }
    const gates = ofType(r, 'gate');
    assert.deepEqual(
      gates.map((g) => [g.event.pass, g.event.first_bad_replay]),
      [
        [true, null],
        [true, null],
      ],
    );
    assert.match(r.report, /\| identity \| pass \| graph replay byte-identical to eager in 2 check\(s\) \|/);
    assert.match(r.report, /\| input \| pass \| all 18 planned reps used \|/);
    assert.match(
      r.report,
      /Backend: command \(the user's binary\); device: .* \(torch-decode through orch_rank\.py 1\.0, cpu, timed by host-clock\)\./,
    );
  });

  test('the planted stale input: the gate fails at replay 2 naming the output, every verdict invalid (exit 5)', () => {
    const r = submit('torch-decode-stale', '{ GRAPH: true, STALE_INPUT: true }');
    assert.equal(r.code, 5, r.output);
    const gates = ofType(r, 'gate');
    assert.deepEqual(
      gates.map((g) => [g.event.pass, g.event.first_bad_replay, g.event.first_bad_output]),
      [
        [false, 2, 'logits'],
        [false, 2, 'logits'],
      ],
    );
    assert.match(
      r.report,
      /identity gate failed: graph replay differs from eager \(block \d arm graph rank 0 \(card cpu:\d@[^)]*\) first differing replay 2, output logits; block \d arm graph rank 0 \(card cpu:\d@[^)]*\) first differing replay 2, output logits\)/,
    );
    assert.match(r.report, /INVALID/);
  });
});
