/**
 * counting3.sh's table from what it left in WORK: counting's cost with the injection library paused
 * for the timed steps, outside orch (four variants of each example) and through `orch submit`
 * (counting on against off), beside the cost before (jobs/counting-cost.ts, the rows the report
 * quotes). Every number the table needs that is missing, and every step counting3.sh listed in
 * WORK/missing.txt, is named in the last line, and the exit code is 1.
 *   node --import tsx bench/h200/user-rank/counting3-table.ts WORK
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COUNTING_COST } from '../../../jobs/counting-cost.ts';
import { WARMUP_SOURCE } from '../../../orchestrator/stats/launch-summary.ts';
import { armMs, exitOf, fixed as f, line, mean, ratio, report, resultsDir } from './bench-results.ts';

const work = process.argv[2] ?? '/tmp/counting3';
const TARGET = 1.01; // issue 40: counting on/off ≤ 1.01 on graph and eager steps of both examples
const missing: string[] = existsSync(join(work, 'missing.txt'))
  ? readFileSync(join(work, 'missing.txt'), 'utf8').trim().split('\n').filter(Boolean)
  : [];
/** The value, or null with `what` named among the missing. */
const needed = (x: number | null, what: string): number | null => {
  if (x === null) missing.push(`${what}: not measured`);
  return x;
};
const within = (r: number | null) => (r === null ? '—' : r <= TARGET ? 'yes' : 'NO');

// 1. outside orch
const VARIANTS = [
  ['none', 'no library'],
  ['always', 'counting throughout (ORCH_INJECT_PAUSE=never)'],
  ['finalize', 'warm-up counted, paused: cuptiFinalize'],
  ['unsubscribe', 'warm-up counted, paused: cuptiUnsubscribe'],
] as const;
const PROGRAMS = [
  ['cuda', { eager: 'eager_ms', graph: 'graph_ms', 'graph+pdl': 'graph_pdl_ms' }],
  ['torch', { eager: 'eager_ms_median', graph: 'graph_ms_median' }],
] as const;
console.log(
  "== 1. outside orch (--standalone): each run's median step, the mean of two alternated rounds, ms; each variant / no library (target for the paused ones ≤ 1.01)",
);
console.log(
  `| program | step | ${VARIANTS.map(([, what]) => what).join(' | ')} | ${VARIANTS.slice(1)
    .map(([v]) => `${v}/none`)
    .join(' | ')} | ≤ ${TARGET} (finalize, unsubscribe) |`,
);
console.log(`|${' --- |'.repeat(2 + VARIANTS.length * 2)}`);
for (const [prog, fields] of PROGRAMS) {
  for (const [step, field] of Object.entries(fields)) {
    const ms = VARIANTS.map(([v]) =>
      needed(mean([1, 2].map((round) => line(work, `${prog}-${v}-${round}`)?.[field])), `${prog}-${v} ${step}`),
    );
    const ratios = ms.slice(1).map((m) => ratio(m, ms[0] ?? null));
    console.log(
      `| ${prog} | ${step} | ${ms.map((m) => f(m)).join(' | ')} | ${ratios.map((r) => f(r)).join(' | ')} | ${within(ratios[1] ?? null)}, ${within(ratios[2] ?? null)} |`,
    );
  }
}
// whether the pause held: the CUDA example counts its runs whose timed steps ran paused (3 variants × reps);
// the PyTorch one says what its last rep's launches were of
console.log('\n| program | variant | round 1 | round 2 |');
console.log('| --- | --- | --- | --- |');
for (const v of ['always', 'finalize', 'unsubscribe']) {
  const said = (prog: string, round: number) => {
    const l = line(work, `${prog}-${v}-${round}`) as Record<string, unknown> | null;
    if (l === null) return exitOf(work, `${prog}-${v}-${round}`);
    return prog === 'cuda' ? `paused_runs ${String(l.paused_runs)}` : `counted ${String(l.counted)}`;
  };
  for (const prog of ['cuda', 'torch']) console.log(`| ${prog} | ${v} | ${said(prog, 1)} | ${said(prog, 2)} |`);
}
// a paused variant whose timed steps did not run paused measured something else: named as missing
for (const v of ['finalize', 'unsubscribe'])
  for (const round of [1, 2]) {
    const cuda = line(work, `cuda-${v}-${round}`) as Record<string, unknown> | null;
    const torch = line(work, `torch-${v}-${round}`) as Record<string, unknown> | null;
    if (cuda !== null && !(Number(cuda.paused_runs) > 0))
      missing.push(`cuda-${v}-${round}: no run paused (paused_runs ${String(cuda.paused_runs)})`);
    if (torch !== null && torch.counted !== 'warmup')
      missing.push(`torch-${v}-${round}: its reps counted ${String(torch.counted)}, not the warm-up`);
  }

// 2. through orch
console.log(`\n== 2. counting on vs off through orch (arm medians, ms; target on/off ≤ ${TARGET})`);
console.log(
  "| program | arm | on (each run) | off (each run) | on/off | ≤ 1.01 | before | counted by (the on run's report) |",
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
/** The "counted by" cell of an arm's row in the Launches section of NAME's report.md. */
const countedBy = (name: string, arm: string): string => {
  const d = resultsDir(work, name);
  if (d === null) return '—';
  const md = readFileSync(join(d, 'report.md'), 'utf8');
  const section = md.slice(md.indexOf('## Launches'));
  const row = section.split('\n').find((l) => l.startsWith(`| ${arm} |`));
  return row?.split('|').at(-2)?.trim() ?? '—';
};
const PROGRAM_NAMES = {
  cuda: 'the CUDA example (examples/cuda-decode)',
  torch: 'the PyTorch example (examples/torch-decode)',
} as const;
const costRows: string[] = [];
for (const [prog, runs, arms] of [
  ['cuda', [1, 2], ['eager', 'graph']],
  ['torch', [1], ['eager', 'graph']],
] as const) {
  for (const arm of arms) {
    const each = (side: string) => runs.map((i) => armMs(report(work, `${prog}-${side}-${i}`), arm));
    const on = needed(mean(each('on')), `${prog} on ${arm}`);
    const off = needed(mean(each('off')), `${prog} off ${arm}`);
    const r = ratio(on, off);
    const before = COUNTING_COST.find((c) => c.program === PROGRAM_NAMES[prog] && c.step === arm);
    const counted = countedBy(`${prog}-on-1`, arm);
    if (counted !== '—' && counted !== WARMUP_SOURCE)
      missing.push(`${prog}-on-1 ${arm}: counted by "${counted}", not the warm-up: the pause did not hold`);
    console.log(
      `| ${prog} | ${arm} | ${f(on)} (${each('on')
        .map((x) => f(x))
        .join(', ')}) | ${f(off)} (${each('off')
        .map((x) => f(x))
        .join(
          ', ',
        )}) | ${f(r)} | ${within(r)} | ${before === undefined ? '—' : `${before.on_off} (${before.measured})`} | ${counted} |`,
    );
    if (r !== null)
      costRows.push(
        `  { program: '${PROGRAM_NAMES[prog]}', step: '${arm}', on_off: ${r.toFixed(3)}, measured: 'H200, bench/h200/user-rank/counting3.sh, ${new Date().toISOString().slice(0, 10)}' },`,
      );
  }
}
console.log('\njobs/counting-cost.ts COUNTING_COST from this run:');
console.log(costRows.join('\n'));
console.log(
  missing.length === 0
    ? '\ncounting3: every step ran'
    : `\ncounting3: FAILED: ${missing.length} missing: ${missing.join('; ')}`,
);
process.exitCode = missing.length === 0 ? 0 : 1;
