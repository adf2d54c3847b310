/**
 * Where a block's leased time went, from a results directory's events.jsonl alone (one rank per
 * block): ranks ready, each identity gate, gate-to-first-rep, the reps (warm-up, measured, the
 * rest of their spans), the gaps between reps, and the tail from the last rep to the commit.
 * Leased, ready and tail are on the Redis clock (stream entry ids: when the worker appended the
 * line); gate and rep spans on the rank's CLOCK_MONOTONIC (t_start_ns/t_end_ns). Shares: of leased.
 *   node --import tsx bench/h200/account.ts RESULTS_DIR
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cardTimeOf, readResultsDir } from '../../orchestrator/report/results-dir.ts';

interface Ev {
  id: string;
  block: number;
  committed: boolean;
  event: {
    type?: string;
    event?: string;
    warmup?: number;
    t_start_ns?: number;
    t_end_ns?: number;
    step_ms?: number[];
    warmup_ms?: number[];
    arm?: string;
    graph?: string | null;
  };
}

const dir = process.argv[2] as string;
const evs = readFileSync(join(dir, 'events.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l) as Ev)
  .filter((e) => e.committed);
const t = (id: string) => Number(id.split('-')[0]);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const s = (ms: number) => `${(ms / 1000).toFixed(3)} s`;

for (const row of cardTimeOf(readResultsDir(dir))) {
  const b = evs.filter((e) => e.block === row.block);
  const start = b.find((e) => e.event.event === 'block-start') as Ev;
  const end = b.find((e) => e.event.event === 'block-committed') as Ev;
  const hello = b.find((e) => e.event.type === 'hello');
  const gates = b.filter((e) => e.event.type === 'gate');
  const reps = b.filter((e) => e.event.type === 'rep');
  const span = (e: Ev) => ((e.event.t_end_ns ?? 0) - (e.event.t_start_ns ?? 0)) / 1e6;
  const leased = t(end.id) - t(start.id);
  const lines: [string, number][] = [];
  lines.push(['ranks ready (block-start → hello)', hello ? t(hello.id) - t(start.id) : NaN]);
  const timed = gates.every((g) => g.event.t_start_ns !== undefined);
  if (gates.length > 0 && timed) {
    lines.push([
      `gates' spans (${gates.length}: ${gates.map((g) => `${g.event.arm} ${span(g).toFixed(0)}`).join(', ')} ms)`,
      sum(gates.map(span)),
    ]);
    const between = gates
      .slice(1)
      .map((g, i) => ((g.event.t_start_ns as number) - (gates[i]!.event.t_end_ns as number)) / 1e6);
    lines.push(['between gates (worker turnaround)', sum(between)]);
    if (hello)
      lines.push(['hello → first gate start (Redis clock, approx.)', t(gates[0]!.id) - t(hello.id) - span(gates[0]!)]);
    if (reps[0])
      lines.push([
        'last gate → first rep start',
        ((reps[0].event.t_start_ns as number) - (gates.at(-1)!.event.t_end_ns as number)) / 1e6,
      ]);
  } else if (gates.length > 0) {
    lines.push([
      `gates (${gates.length}, Redis clock: hello → last gate line)`,
      t(gates.at(-1)!.id) - (hello ? t(hello.id) : t(start.id)),
    ]);
  }
  // A graphrt older than warmup_ms: each rep's warm-up estimated as `warmup` x its mean measured step.
  const known = reps.every((r) => r.event.warmup_ms);
  const mean = (xs: number[]) => (xs.length > 0 ? sum(xs) / xs.length : 0);
  const warm = sum(
    reps.map((r) => (known ? sum(r.event.warmup_ms as number[]) : (r.event.warmup ?? 0) * mean(r.event.step_ms ?? []))),
  );
  const measured = sum(reps.map((r) => sum(r.event.step_ms ?? [])));
  const spans = sum(reps.map(span));
  lines.push(['reps: measured steps', measured]);
  lines.push([known ? 'reps: warm-up steps' : 'reps: warm-up steps (estimated: warmup x mean step)', warm]);
  lines.push(['  measured + warm-up', measured + warm]);
  lines.push(['reps: rest of spans (make, capture, resets, hashing)', spans - measured - warm]);
  const sorted = [...reps].sort((x, y) => (x.event.t_start_ns as number) - (y.event.t_start_ns as number));
  lines.push([
    'between reps (gaps)',
    sum(sorted.slice(1).map((r, i) => ((r.event.t_start_ns as number) - (sorted[i]!.event.t_end_ns as number)) / 1e6)),
  ]);
  if (reps.length > 0)
    lines.push([
      'last rep line → block-committed (look, flush, commit)',
      t(end.id) - Math.max(...reps.map((r) => t(r.id))),
    ]);
  const fresh = reps.filter((r) => r.event.graph === 'fresh').length;
  console.log(`block ${row.block}: leased ${s(leased)}; ${reps.length} reps (${fresh} with a fresh capture)`);
  for (const [what, ms] of lines)
    console.log(
      `  ${what.padEnd(58)} ${Number.isFinite(ms) ? s(ms).padStart(9) : '        —'}  ${Number.isFinite(ms) ? `${((100 * ms) / leased).toFixed(1).padStart(5)} %` : ''}`,
    );
}
