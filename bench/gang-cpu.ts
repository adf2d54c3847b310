/**
 * A user's tensor-parallel C++ program as a gang on cpu cards: configs/cuda-tp-cpu.yaml
 * (examples/cuda-tp's CPU build, its all-reduce over sockets set up through orch's exchange) at 1
 * rank and at 2 ranks, each run one `orch submit` on the embedded default with two cpu cards. The
 * worlds alternate run by run (1, 2, then 2, 1, ...), so neither always goes first on a shared machine.
 * Per world, the median over runs of: each arm's median ms/step (a gang's step is its slowest
 * rank's), and per card the rep share and gap p50 (orchestrator/stats/busy-share.ts, the report's
 * "Card time"); the identity gate's checks passed; then 2 ranks over 1 rank per arm. The step is
 * the same model at both worlds (every rank draws the full weights and keeps its shard), so the
 * ratio is what splitting it costs or gains: half the math per rank against one socket
 * all-reduce per layer.
 *
 * Run: npm run bench -- gang-cpu          BENCH_RUNS (runs per world, default 3)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CommitRecord, CommitRecordSchema } from '../jobs/commit-record.ts';
import { type RepResult, RepResultSchema } from '../jobs/rep-result.ts';
import { busyShare } from '../orchestrator/stats/busy-share.ts';
import { median } from '../orchestrator/stats/descriptive.ts';
import { submitSpec } from '../test/utils/submit-spec.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const WORLDS = [1, 2] as const;
const SPEC = 'configs/cuda-tp-cpu.yaml';
const EMBEDDED = { REDIS_URL: '', ORCH_PREFIX: '', ORCH_CPU_CARDS: '2' };

interface Run {
  verdict: string;
  /** arm → median ms/step */
  arms: Record<string, number | null>;
  /** identity checks passed / run, over ranks */
  gates: { passed: number; checks: number };
  rep_share: number[];
  gap_p50_ms: number[];
}

/** configs/cuda-tp-cpu.yaml at `world` ranks; refuses when the file no longer has the line it changes. */
function specAt(world: number): string {
  const yaml = readFileSync(SPEC, 'utf8');
  if (!/ranks: 2 }/.test(yaml)) throw new Error(`${SPEC}: no "ranks: 2 }" left to set the gang's size in`);
  return yaml.replace('ranks: 2 }', `ranks: ${world} }`).replace(/^name: cuda-tp-cpu$/m, `name: cuda-tp-cpu-w${world}`);
}

function runAt(world: number, run: number): Run {
  const s = submitSpec(`gang-cpu-w${world}-${run}`, specAt(world), EMBEDDED);
  if (s.code !== 0)
    throw new Error(`world ${world} run ${run}: orch submit exited ${s.code}:\n${s.output.slice(-3000)}`);
  const report = JSON.parse(readFileSync(join(s.dir, 'report.json'), 'utf8')) as {
    verdict: string;
    arms: { arm: string; median: number | null }[];
  };
  const reps: RepResult[] = readFileSync(join(s.dir, 'reps.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => RepResultSchema.parse(JSON.parse(l)));
  const commits: Record<string, CommitRecord> = Object.fromEntries(
    Object.entries(s.summary.commits as Record<string, unknown>).map(([block, c]) => [
      block,
      CommitRecordSchema.parse(c),
    ]),
  );
  const cards = busyShare(reps, commits);
  const gates = s.events.filter((e) => e.event.type === 'gate');
  return {
    verdict: report.verdict,
    arms: Object.fromEntries(report.arms.map((a) => [a.arm, a.median])),
    gates: { passed: gates.filter((g) => g.event.pass === true).length, checks: gates.length },
    rep_share: cards.flatMap((c) => (c.rep_share === null ? [] : [c.rep_share])),
    gap_p50_ms: cards.flatMap((c) => (c.gap_p50_ms === null ? [] : [c.gap_p50_ms])),
  };
}

const fixed = (x: number | null, digits: number) => (x === null ? '—' : x.toFixed(digits));
const medianOrNull = (xs: number[]) => (xs.length === 0 ? null : median(xs));

const byWorld = new Map<number, Run[]>(WORLDS.map((w) => [w, []]));
for (let run = 0; run < RUNS; run++) {
  const order = run % 2 === 0 ? WORLDS : [...WORLDS].reverse();
  for (const world of order) byWorld.get(world)?.push(runAt(world, run));
}

const arms = ['eager', 'graph'];
const armMedian = (world: number, arm: string) =>
  medianOrNull((byWorld.get(world) ?? []).flatMap((r) => (r.arms[arm] == null ? [] : [r.arms[arm] as number])));

console.log(`\n${SPEC} (examples/cuda-tp, CPU build) on cpu cards, ${RUNS} run(s) per world, medians over runs\n`);
console.log(
  '| ranks | verdicts | eager ms/step | graph ms/step | identity checks passed | rep share per card | gap p50 per card |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const world of WORLDS) {
  const runs = byWorld.get(world) ?? [];
  const passed = runs.reduce((n, r) => n + r.gates.passed, 0);
  const checks = runs.reduce((n, r) => n + r.gates.checks, 0);
  const share = medianOrNull(runs.flatMap((r) => r.rep_share));
  const gap = medianOrNull(runs.flatMap((r) => r.gap_p50_ms));
  console.log(
    `| ${world} | ${runs.map((r) => r.verdict).join(', ')} | ${fixed(armMedian(world, 'eager'), 3)} | ${fixed(armMedian(world, 'graph'), 3)} | ${passed}/${checks} | ${share === null ? '—' : `${(100 * share).toFixed(1)} %`} | ${fixed(gap, 1)} ms |`,
  );
}
const ratios = arms.map((arm) => {
  const one = armMedian(1, arm);
  const two = armMedian(2, arm);
  return `${arm} ${one === null || two === null ? '—' : (two / one).toFixed(3)}`;
});
console.log(
  `\n2 ranks / 1 rank, ms/step: ${ratios.join(', ')} (load average ${(await import('node:os')).loadavg()[0]?.toFixed(2)})`,
);
