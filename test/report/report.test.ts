/**
 * The renderings of an Analysis: Markdown (reading order, every table), CSV (parses back to the
 * analysis' own numbers), JSON (round-trips), SVG plots (one mark per rep, error bars from the
 * t quantile), and the exit codes of the four verdicts, each reached by a simulated experiment.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { captureFailedReason } from '../../jobs/capture-blocker.ts';
import { EXIT_CODES, FAIL_ON_CHOICES, outcomeExitCode } from '../../orchestrator/report/outcome-exit-code.ts';
import { renderCsv } from '../../orchestrator/report/render-csv.ts';
import { REPORT_JSON_VERSION, renderJson } from '../../orchestrator/report/render-json.ts';
import { renderMarkdown } from '../../orchestrator/report/render-markdown.ts';
import { renderLooChart, renderPlots, renderStripPlot } from '../../orchestrator/report/render-plots.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import { studentQuantile } from '../../orchestrator/stats/distributions.ts';
import type { AnalysisInput, Outcome } from '../../orchestrator/stats/types.ts';
import { abWithAa, looExperiment } from '../stats/fixtures.ts';
import { parseCsv } from '../utils/csv.ts';

test('Markdown: verdict in the title, then gates, arms, comparisons, LOO, order, drift, input', () => {
  const a = analyzeExperiment(looExperiment(61));
  const md = renderMarkdown(a);
  assert.ok(md.startsWith(`# ${a.experiment}: ${a.verdict.toUpperCase()}\n`));
  const order = [
    '## Gates',
    '## Arms',
    '## Paired comparisons',
    '## Leave-one-out',
    '## Order effects',
    '## Drift',
    '## Input',
    '## Exit codes',
  ];
  const at = order.map((h) => md.indexOf(h));
  assert.ok(
    at.every((i, k) => i > 0 && (k === 0 || i > at[k - 1]!)),
    JSON.stringify(at),
  );
  for (const s of a.arms)
    assert.match(md, new RegExp(`^\\| ${s.arm}( \\(A/A of \\w+\\))? \\| ${s.n} \\| ${s.planned} \\|`, 'm'));
  for (const r of a.loo!.rows) assert.match(md, new RegExp(`^\\| ${r.toggle} \\|`, 'm'));
  assert.match(md, /Interaction check: the worths add up: base − all_on = /);
});

test('CSV tables parse back to the analysis numbers', () => {
  const a = analyzeExperiment(looExperiment(62));
  const t = renderCsv(a);
  const reps = parseCsv(t.reps);
  assert.deepEqual(reps[0], ['experiment', 'block', 'arm', 'rep', 'position', 'value', 'throttled', 'reruns']);
  assert.equal(reps.length - 1, a.values.length);
  for (const [i, r] of reps.slice(1).entries()) assert.equal(Number(r[5]), a.values[i]!.value);
  const arms = parseCsv(t.arms);
  assert.equal(arms.length - 1, a.arms.length);
  const head = arms[0]!;
  for (const [i, s] of a.arms.entries()) {
    assert.equal(Number(arms[i + 1]![head.indexOf('sem')]), s.sem);
    assert.equal(arms[i + 1]![head.indexOf('aa_of')], s.aa_of ?? '');
  }
  const comps = parseCsv(t.comparisons);
  const ch = comps[0]!;
  const statement = comps.slice(1).map((r) => r[ch.indexOf('statement')]);
  assert.ok(statement.includes(a.primary!.statement), 'statements with commas survive quoting');
  assert.equal(parseCsv(t.loo).length - 1, a.loo!.rows.length);
  assert.equal(parseCsv(t.drift).length - 1, a.drift.length);
});

test('JSON round-trips the analysis with its version and exit code', () => {
  const a = analyzeExperiment(abWithAa(63));
  const doc = JSON.parse(renderJson(a)) as Record<string, unknown>;
  assert.equal(doc.version, REPORT_JSON_VERSION);
  assert.equal(doc.exit_code, outcomeExitCode(a));
  const { version: _v, exit_code: _e, ...rest } = doc;
  assert.deepEqual(rest, JSON.parse(JSON.stringify(a)));
});

test('SVG: one point per rep in the strip plot; LOO error bars span the t interval of each worth', () => {
  const a = analyzeExperiment(looExperiment(64));
  const strip = renderStripPlot(a);
  assert.ok(strip.startsWith('<svg xmlns="http://www.w3.org/2000/svg"'));
  assert.equal(strip.match(/<circle /g)!.length, a.values.length);
  const loo = renderLooChart(a)!;
  const bars = [
    ...loo.matchAll(
      /<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)"[^\n]*\n<line x1="([\d.]+)" x2="\2" y1="([\d.]+)" y2="([\d.]+)"/g,
    ),
  ];
  assert.equal(bars.length, a.loo!.rows.length);
  bars.forEach((m, i) => {
    const r = a.loo!.rows[i]!;
    const perUnit = Number(m[1]) / Math.abs(r.worth!);
    const half = Math.abs(Number(m[3]) - Number(m[4])) / 2 / perUnit;
    const want = studentQuantile(1 - a.alpha / 2, r.df!) * r.worth_se!;
    assert.ok(Math.abs(half - want) <= 0.01 * want, `${r.toggle}: error bar ±${half} vs t·se ${want}`);
  });
  const plots = renderPlots(a);
  assert.deepEqual(Object.keys(plots).sort(), ['arms.svg', 'drift.svg', 'loo.svg']);
  assert.equal(renderLooChart(analyzeExperiment(abWithAa(64))), null);
  for (const svg of Object.values(plots)) {
    assert.equal(svg.match(/<svg /g)!.length, 1);
    assert.ok(svg.trimEnd().endsWith('</svg>'));
  }
});

/** The same experiment as a sequential one (stopping: sequential, two looks), its blocks ended in order. */
function sequential(input: ReturnType<typeof abWithAa>): ReturnType<typeof abWithAa> {
  return {
    ...input,
    plan: { ...input.plan, sequential: { looks: 2 } },
    ended: input.plan.blocks.map((b, i) => ({ block: b.index, ended_at: i })),
  };
}

/** `input` with every rep of `arm` failed as a capture blocker (jobs/capture-blocker.ts). */
function blocked(input: AnalysisInput, arm: string): AnalysisInput {
  const reason = captureFailedReason({
    message: 'RuntimeError: Cannot copy between CPU and CUDA tensors during CUDA graph capture',
    frame: { file: 'model.py', line: 7 },
  });
  return {
    ...input,
    reps: input.reps.filter((r) => r.arm !== arm),
    failed: [
      ...input.failed,
      ...input.reps
        .filter((r) => r.arm === arm)
        .map((r) => ({ block: r.block, arm: r.arm, rep: r.rep, position: r.position, reason })),
    ],
  };
}

test('exit codes: one per outcome, clear of 1 (bug) and 2 (user input); each outcome reached; partial data never decides', () => {
  const failing = Object.entries(EXIT_CODES).filter(([, c]) => c !== 0);
  assert.equal(new Set(failing.map(([, c]) => c)).size, failing.length, 'every outcome that fails has its own code');
  assert.ok(failing.every(([, c]) => c !== 1 && c !== 2));
  const seen = new Map<Outcome, number>();
  const every = new Set(FAIL_ON_CHOICES);
  const stopped = (state: 'cancelled' | 'failed') => ({ state, reason: `${state} for the test`, user_input: false });
  const cases: [Outcome, AnalysisInput][] = [
    ['faster', abWithAa(65)],
    [
      'slower',
      abWithAa(65, {
        arms: [
          { name: 'A', mu: 40, toggles: {} },
          { name: 'B', mu: 41.6, toggles: {} },
        ],
      }),
    ],
    [
      'inconclusive',
      abWithAa(65, {
        arms: [
          { name: 'A', mu: 40, toggles: {} },
          { name: 'B', mu: 40, toggles: {} },
        ],
      }),
    ],
    [
      'invalid',
      abWithAa(65, {}, { gates: [{ block: 0, arm: 'B', name: 'identity', pass: false, first_bad_replay: 4 }] }),
    ],
    [
      'equivalent',
      sequential(
        abWithAa(65, {
          arms: [
            { name: 'A', mu: 40, toggles: {} },
            { name: 'B', mu: 40, toggles: {} },
          ],
        }),
      ),
    ],
    // the data of a planted +4 % regression, cut short: no speed verdict, never 4
    [
      'cancelled',
      {
        ...abWithAa(65, {
          arms: [
            { name: 'A', mu: 40, toggles: {} },
            { name: 'B', mu: 41.6, toggles: {} },
          ],
        }),
        stopped: stopped('cancelled'),
      },
    ],
    [
      'failed',
      {
        ...abWithAa(65, {
          arms: [
            { name: 'A', mu: 40, toggles: {} },
            { name: 'B', mu: 41.6, toggles: {} },
          ],
        }),
        stopped: stopped('failed'),
      },
    ],
    // the treatment's capture failed in the program (a capture blocker): its reps failed with it
    ['not_testable', blocked(abWithAa(65), 'B')],
  ];
  for (const [want, input] of cases) {
    const a = analyzeExperiment(input);
    assert.equal(a.verdict, want);
    seen.set(want, outcomeExitCode(a, every));
    if (want === 'cancelled' || want === 'failed') {
      assert.equal(a.primary?.verdict, 'slower', 'the partial data is still shown as measured');
      const md = renderMarkdown(a);
      assert.match(md, new RegExp(`^# \\S+: ${want.toUpperCase()}$`, 'm'), md);
      assert.match(md, new RegExp(`no verdict: the plan did not run to its end.*${want} for the test`), md);
      assert.equal(outcomeExitCode(a, new Set()), EXIT_CODES[want], '--fail-on cannot let a run that ended early pass');
    }
  }
  assert.deepEqual(
    Object.fromEntries(seen),
    Object.fromEntries(Object.entries(EXIT_CODES).filter(([o]) => o !== 'pass' && o !== 'fail')),
  );
  // a failure on the user's input (a build that failed) exits 2, as any input error
  assert.equal(
    outcomeExitCode(analyzeExperiment({ ...abWithAa(65), stopped: { ...stopped('failed'), user_input: true } })),
    2,
  );
});

test('--fail-on: an outcome it leaves out exits 0; the default fails slower and invalid, passes inconclusive and equivalent', () => {
  const flat = abWithAa(65, {
    arms: [
      { name: 'A', mu: 40, toggles: {} },
      { name: 'B', mu: 40, toggles: {} },
    ],
  });
  const slower = analyzeExperiment(
    abWithAa(65, {
      arms: [
        { name: 'A', mu: 40, toggles: {} },
        { name: 'B', mu: 41.6, toggles: {} },
      ],
    }),
  );
  const inconclusive = analyzeExperiment(flat);
  const equivalent = analyzeExperiment(sequential(flat));
  const invalid = analyzeExperiment(
    abWithAa(65, {}, { gates: [{ block: 0, arm: 'B', name: 'identity', pass: false, first_bad_replay: 4 }] }),
  );
  assert.deepEqual(
    [slower, inconclusive, equivalent, invalid].map((a) => outcomeExitCode(a)),
    [EXIT_CODES.slower, 0, 0, EXIT_CODES.invalid],
  );
  assert.deepEqual(
    [slower, inconclusive, equivalent, invalid].map((a) => outcomeExitCode(a, new Set(['inconclusive']))),
    [0, EXIT_CODES.inconclusive, 0, 0],
  );
  assert.equal(outcomeExitCode(equivalent, new Set(['equivalent'])), EXIT_CODES.equivalent);
  assert.match(
    renderMarkdown(inconclusive),
    /Exit code 0 \(inconclusive\) with the default --fail-on slower,invalid,fail,not_testable; 3 with --fail-on inconclusive\./,
  );
});
