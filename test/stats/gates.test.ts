/**
 * The gates turn every verdict invalid and say why first: an A/A arm that differs from its twin
 * (planted: the "copy" runs 3 % slower), a failed identity check, a base arm away from its
 * reference build. Each gate is also shown passing, so none can be a constant.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { outcomeExitCode } from '../../orchestrator/report/outcome-exit-code.ts';
import { renderMarkdown } from '../../orchestrator/report/render-markdown.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import { pct, signedPct } from '../../orchestrator/stats/format-number.ts';
import { NO_DISCRIMINATING_POWER } from '../../orchestrator/stats/gates.ts';
import { abWithAa, looExperiment } from './fixtures.ts';

const afterTitle = (md: string) => md.split('\n').slice(1, 6).join('\n');

test('A/A gate passes when the copy is identical, and the A/B verdict stands', () => {
  const a = analyzeExperiment(abWithAa(31));
  const gate = a.gates.find((g) => g.name === 'aa')!;
  assert.equal(gate.pass, true);
  assert.equal(a.aa!.verdict, 'inconclusive');
  assert.equal(a.verdict, 'faster');
  assert.equal(outcomeExitCode(a), 0);
});

test('A/A gate: a copy that differs from its twin makes every verdict invalid, reason and numbers first', () => {
  const input = abWithAa(32);
  for (const r of input.reps) if (r.arm === 'A_aa') r.step_ms = r.step_ms.map((x) => x * 1.03);
  const a = analyzeExperiment(input);
  assert.equal(a.aa!.verdict, 'slower');
  assert.equal(a.verdict, 'invalid');
  assert.equal(outcomeExitCode(a), 5);
  const first = a.invalid_reasons[0]!;
  assert.ok(first.startsWith(`${NO_DISCRIMINATING_POWER}: `), first);
  assert.ok(first.includes(signedPct(a.aa!.relative.estimate)), first);
  assert.ok(first.includes(`${a.aa!.pairs} pairs`), first);
  for (const c of a.comparisons) {
    assert.equal(c.verdict, 'invalid');
    assert.equal(c.reasons[0], first);
  }
  assert.equal(a.primary!.verdict, 'invalid');
  const md = renderMarkdown(a);
  assert.match(afterTitle(md), new RegExp(`- ${NO_DISCRIMINATING_POWER}`));
  assert.ok(md.indexOf(NO_DISCRIMINATING_POWER) < md.indexOf('## Gates'));
});

test('identity gate: one failed byte-identity check invalidates the experiment, named first', () => {
  const gates = [
    { block: 0, arm: 'A', name: 'identity' as const, pass: true, first_bad_replay: null },
    { block: 1, arm: 'B', name: 'identity' as const, pass: false, first_bad_replay: 3 },
  ];
  const a = analyzeExperiment(abWithAa(33, {}, { gates }));
  assert.equal(a.verdict, 'invalid');
  assert.match(
    a.invalid_reasons[0]!,
    /^identity gate failed: graph replay differs from eager \(block 1 arm B first differing replay 3\)/,
  );
  assert.match(afterTitle(renderMarkdown(a)), /identity gate failed/);
  const ok = analyzeExperiment(abWithAa(33, {}, { gates: gates.slice(0, 1) }));
  assert.equal(ok.gates.find((g) => g.name === 'identity')!.pass, true);
  assert.notEqual(ok.verdict, 'invalid');
});

test('base-reference gate: base within tolerance passes, outside fails with both values', () => {
  const probe = analyzeExperiment(looExperiment(34));
  const baseMean = probe.arms.find((s) => s.arm === 'base')!.mean!;
  const near = analyzeExperiment(looExperiment(34, { base_reference: { value: baseMean * 1.005, tolerance: 0.01 } }));
  assert.equal(near.gates.find((g) => g.name === 'base_reference')!.pass, true);
  assert.equal(near.verdict, 'faster');
  const far = analyzeExperiment(looExperiment(34, { base_reference: { value: baseMean * 1.05, tolerance: 0.01 } }));
  assert.equal(far.verdict, 'invalid');
  const msg = far.invalid_reasons[0]!;
  assert.match(msg, /^base-reference gate failed: arm base /);
  assert.ok(msg.includes(`tolerance ±${pct(0.01)}`), msg);
  assert.ok(
    far.loo!.rows.every((r) => r.worth !== null),
    'the LOO numbers are still shown',
  );
});
