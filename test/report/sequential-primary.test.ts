/**
 * A sequential verdict is printed beside the numbers it was decided on. Simulated: B 5 % slower
 * than A in the two blocks of look 1, which decides slower; block 3 was running then and ends with
 * B 20 % faster. The fixed-design CI over all three blocks straddles 0: printed beside "slower" it
 * contradicted the verdict in report.md's comparisons table, the CSV, JUnit and the GitHub output
 * (orchestrator/report/ci-cases.ts). Each now shows look 1's pairs,
 * estimate and repeated CI, and no p; the fixed-design view is a reason, said as such. A run to its
 * budget without a decision shows the last look's repeated CI the same way.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ciCases } from '../../orchestrator/report/ci-cases.ts';
import { DEFAULT_FAIL_ON_SET, type FailOnSet } from '../../orchestrator/report/outcome-exit-code.ts';
import { renderCsv } from '../../orchestrator/report/render-csv.ts';
import { githubAnnotations, githubSummary } from '../../orchestrator/report/render-github.ts';
import { renderJunit } from '../../orchestrator/report/render-junit.ts';
import { renderMarkdown } from '../../orchestrator/report/render-markdown.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import { signedPct } from '../../orchestrator/stats/format-number.ts';
import type { Analysis, AnalysisInput } from '../../orchestrator/stats/types.ts';
import { seeded, simulateExperiment, twoArms } from '../stats/simulate.ts';
import { parseCsv } from '../utils/csv.ts';

/** Six blocks, three looks; the blocks in `ran` ended in that order, B's reps in `changed` 20 % faster. */
function sequentialRun(ratio: number, ran: number[], changed: number[], minEffect: number): AnalysisInput {
  const input = simulateExperiment(twoArms(ratio, { blocks: 6, reps: 4, sigma: 0.005 }), seeded(5), {
    min_effect: minEffect,
  });
  return {
    ...input,
    plan: { ...input.plan, sequential: { looks: 3 } },
    reps: input.reps
      .filter((r) => ran.includes(r.block))
      .map((r) => (changed.includes(r.block) && r.arm === 'B' ? { ...r, step_ms: r.step_ms.map((x) => x * 0.8) } : r)),
    ended: ran.map((block, i) => ({ block, ended_at: i })),
  };
}

/**
 * Every output that prints the primary comparison shows `rci` (its repeated CI) and no fixed-design
 * p; `failOn` fails its case, so JUnit carries the message.
 */
function printedEverywhere(a: Analysis, rci: string, failOn: FailOnSet): void {
  const md = renderMarkdown(a);
  const row = md.split('\n').find((l) => l.startsWith('| B | A |'))!;
  assert.ok(row.includes(`${rci} (repeated, look ${a.primary!.sequential_look})`), row);
  assert.match(row, /\| — \| — \| \*{0,2}\w+\*{0,2} \|$/, `no p, no Wilcoxon p: ${row}`);
  const message = ciCases(a, failOn).find((c) => c.name === 'B vs A')!.message;
  assert.ok(
    message.includes(`repeated CI ${rci}, look ${a.primary!.sequential_look}, ${a.primary!.pairs} pairs`),
    message,
  );
  assert.doesNotMatch(message, /\bp \d|p </, message);
  assert.ok(renderJunit([a], failOn).includes(`repeated CI ${rci}`));
  assert.ok(githubSummary(a, failOn).includes(`repeated CI ${rci}`));
  // workflow commands escape % as %25
  assert.ok(githubAnnotations(a, failOn).includes(`repeated CI ${rci}`.replaceAll('%', '%25')));
  const [head, ...rows] = parseCsv(renderCsv(a).comparisons);
  const csv = rows.find((r) => r[head!.indexOf('arm')] === 'B')!;
  const at = (name: string) => csv[head!.indexOf(name)];
  assert.deepEqual(
    [at('pairs'), at('relative_ci_low'), at('relative_ci_high'), at('p'), at('wilcoxon_p'), at('sequential_look')],
    [
      String(a.primary!.pairs),
      String(a.primary!.relative.ci![0]),
      String(a.primary!.relative.ci![1]),
      '',
      '',
      String(a.primary!.sequential_look),
    ],
  );
}

describe('a sequential primary comparison', () => {
  test('decided at look 1: every output shows look 1’s estimate and repeated CI, not every block’s CI and p', () => {
    const a = analyzeExperiment(sequentialRun(1.05, [0, 1, 2], [2], 0.01));
    const s = a.sequential!;
    assert.equal(s.decided_at, 1);
    const look = s.looks[0]!;
    assert.equal(look.decision, 'slower');
    const p = a.primary!;
    assert.equal(p.verdict, 'slower');
    assert.equal(a.comparisons[0], p, 'the listed comparison is the primary');
    assert.deepEqual(
      [p.sequential_look, p.pairs, p.relative.estimate, p.relative.ci, p.log_ratio.p, p.wilcoxon.p],
      [1, look.pairs, look.estimate, look.rci, null, null],
    );
    assert.ok(p.log_ratio.ci !== null && Math.abs(Math.expm1(p.log_ratio.ci[1]) - look.rci![1]) < 1e-12);
    // the fixed-design view of all three blocks is kept, as such: here it straddles 0
    const fixed = p.reasons.find((r) =>
      r.startsWith('not decided on: the fixed-design view of all 12 committed pairs'),
    );
    assert.ok(fixed, p.reasons.join('\n'));
    assert.match(fixed, /95 % CI −\d+\.\d+ % to \+\d+\.\d+ %, p = 0\.\d+\)$/, 'it straddles 0');
    printedEverywhere(a, `${signedPct(look.rci![0])} to ${signedPct(look.rci![1])}`, DEFAULT_FAIL_ON_SET);
  });

  test('no decision by the budget: inconclusive beside the last look’s repeated CI', () => {
    const a = analyzeExperiment(sequentialRun(1, [0, 1, 2, 3, 4, 5], [], 0.0001));
    const s = a.sequential!;
    assert.equal(s.decision, 'inconclusive');
    const last = s.looks.at(-1)!;
    const p = a.primary!;
    assert.equal(p.verdict, 'inconclusive');
    assert.deepEqual(
      [p.sequential_look, p.pairs, p.relative.ci, p.log_ratio.p],
      [s.looks.length, last.pairs, last.rci, null],
    );
    assert.match(p.statement, /^inconclusive \(sequential: 3 look\(s\), none decisive; repeated CI .* at look 3 of 3/);
    printedEverywhere(a, `${signedPct(last.rci![0])} to ${signedPct(last.rci![1])}`, new Set(['inconclusive']));
  });
});
