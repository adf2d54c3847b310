/**
 * Issue 27's table from results directories alone: per experiment the card busy share of a block
 * (warm-up + measured steps / leased, orchestrator/stats/busy-share.ts; mean over blocks), the gap
 * between reps (p50, median over blocks; per rep, where a rep line carries no span, the card time
 * between measured windows), the A/A twin's 95 % CI, the eager arm's CV, the identity
 * gate, and graph/eager speedup (from the paired comparison's ratio) beside the same program timed
 * by itself outside orch (its --standalone JSON line), with their ratio.
 *   node --import tsx bench/h200/user-rank/table.ts NAME=RESULTS_DIR[:STANDALONE_JSON[#FIELD]] ...
 * FIELD: which speedup of the standalone line the graph arm is (default `speedup`; the CUDA
 * example's graph arm with PDL is `speedup_graph_pdl`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cardTimeOf, readResultsDir } from '../../../orchestrator/report/results-dir.ts';
import { median } from '../../../orchestrator/stats/descriptive.ts';

interface Report {
  exit_code: number;
  gates: { name: string; pass: boolean | null; message: string }[];
  arms: { arm: string; cv: number | null; median: number | null }[];
  comparisons: { arm: string; reference: string; relative: { estimate: number | null; ci: [number, number] | null } }[];
  aa: { arm: string; relative: { ci: [number, number] | null } } | null;
}

const pct = (x: number | null | undefined, d = 1) =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : `${(x * 100).toFixed(d)} %`;
const num = (x: number | null | undefined, d = 2) =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(d);

/** The speedup of the program's --standalone JSON line, null when it printed none (it failed: see its .err). */
function standaloneSpeedup(spec: string | undefined): number | null {
  if (spec === undefined) return null;
  const [file, field = 'speedup'] = spec.split('#') as [string, string | undefined];
  try {
    const v = (JSON.parse(readFileSync(file, 'utf8').trim().split('\n').pop() as string) as Record<string, unknown>)[
      field
    ];
    return typeof v === 'number' ? v : null;
  } catch {
    return null;
  }
}

const rows: string[][] = [];
for (const arg of process.argv.slice(2)) {
  const [name, rest] = arg.split('=') as [string, string];
  const [dir, standaloneFile] = rest.split(':') as [string, string | undefined];
  const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as Report;
  const busy = cardTimeOf(readResultsDir(dir));
  // per rep, a command's rep line has no warm-up times nor span: its measured-step share, and the
  // card time between measured windows ((leased − measured steps) / reps) for its gap
  const perRep = busy.some((b) => b.busy_share === null);
  const shares = busy.map((b) => b.busy_share ?? b.step_share);
  const gaps = busy.map((b) => b.gap_p50_ms ?? (b.leased_ms - b.step_ms) / b.reps);
  const aaCi = report.aa?.relative.ci ?? null;
  const eager = report.arms.find((a) => a.arm === 'eager');
  const graphVsEager = report.comparisons.find((c) => c.arm === 'graph' && c.reference === 'eager');
  const speedup =
    graphVsEager?.relative.estimate === null || graphVsEager === undefined
      ? null
      : 1 / (1 + (graphVsEager.relative.estimate as number));
  const alone = standaloneSpeedup(standaloneFile);
  const identity = report.gates.find((g) => g.name === 'identity');
  rows.push([
    name,
    `${pct(shares.length === 0 ? null : shares.reduce((a, b) => a + b, 0) / shares.length)}${perRep ? ' (measured steps)' : ''}`,
    gaps.length === 0 ? '—' : `${perRep ? '≈ ' : ''}${num(median(gaps), 2)} ms`,
    aaCi === null ? '—' : `${pct(aaCi[0], 2)} to ${pct(aaCi[1], 2)}`,
    pct(eager?.cv, 2),
    identity?.pass === null || identity === undefined
      ? 'none'
      : identity.pass
        ? 'pass'
        : `FAIL: ${identity.message.replace(/^.*\(|\).*$/g, '')}`,
    speedup === null ? '—' : `${num(speedup, 2)}×`,
    alone === null ? '—' : `${num(alone, 2)}×`,
    speedup === null || alone === null ? '—' : num(speedup / alone, 3),
    String(report.exit_code),
  ]);
}
const head = [
  'experiment',
  'busy share',
  'gap p50',
  'A/A 95 % CI',
  'eager CV',
  'identity',
  'graph/eager in orch',
  'alone',
  'orch / alone',
  'exit',
];
console.log(`| ${head.join(' | ')} |\n| ${head.map(() => '---').join(' | ')} |`);
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
