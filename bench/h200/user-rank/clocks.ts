/**
 * Was a rep slow because the card's clock was low? Per arm of a results directory, the reps' values
 * (the rep's median step) beside the SM clock the rank library read at the rep's start and end
 * (ranklib/PROTOCOL.md "Launch counts and clocks"), the reasons NVML gave, and each rep's launch
 * counts: the medians of the reps whose start clock was at the arm's top clock and of the others.
 *   node --import tsx bench/h200/user-rank/clocks.ts RESULTS_DIR
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { median } from '../../../orchestrator/stats/descriptive.ts';

interface Rep {
  arm: string;
  step_ms: number[];
  clocks?: { start: { sm_mhz: number; reasons: string[] }; end: { sm_mhz: number; reasons: string[] } };
  launches?: {
    source: string;
    kernels?: number[];
    graphs?: number[];
    memcpy?: number[];
    syncs?: number[];
    reason?: string;
  };
}

const dir = process.argv[2] as string;
const reps: Rep[] = readFileSync(join(dir, 'events.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.includes('"type":"rep"'))
  .map((l) => JSON.parse(l) as { committed: boolean; event: Rep })
  .filter((e) => e.committed)
  .map((e) => e.event);
const arms = [...new Set(reps.map((r) => r.arm))];
console.log(
  '| arm | reps | value p50 (ms) | start SM MHz (min–max) | end SM MHz (min–max) | p50 at top start clock | p50 below it | reasons seen | kernels/step | graphs/step | syncs/step |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const arm of arms) {
  const own = reps.filter((r) => r.arm === arm);
  const value = (r: Rep) => median(r.step_ms);
  const starts = own.flatMap((r) => (r.clocks ? [r.clocks.start.sm_mhz] : []));
  const ends = own.flatMap((r) => (r.clocks ? [r.clocks.end.sm_mhz] : []));
  const top = starts.length > 0 ? Math.max(...starts) : null;
  const atTop = own.filter((r) => r.clocks !== undefined && r.clocks.start.sm_mhz === top).map(value);
  const below = own.filter((r) => r.clocks !== undefined && r.clocks.start.sm_mhz !== top).map(value);
  const reasons =
    [...new Set(own.flatMap((r) => (r.clocks ? [...r.clocks.start.reasons, ...r.clocks.end.reasons] : [])))].join(
      ', ',
    ) || '—';
  const per = (k: 'kernels' | 'graphs' | 'syncs') => {
    const xs = own.flatMap((r) =>
      r.launches?.source === 'cupti' && r.launches[k] ? [median(r.launches[k] as number[])] : [],
    );
    return xs.length > 0
      ? String(median(xs))
      : own[0]?.launches?.source === 'none'
        ? `none (${own[0].launches.reason ?? ''})`
        : '—';
  };
  const range = (xs: number[]) => (xs.length === 0 ? '—' : `${Math.min(...xs)}–${Math.max(...xs)}`);
  const p = (xs: number[]) => (xs.length === 0 ? '—' : median(xs).toFixed(3));
  console.log(
    `| ${arm} | ${own.length} | ${p(own.map(value))} | ${range(starts)} | ${range(ends)} | ${p(atTop)} (${atTop.length}) | ${p(below)} (${below.length}) | ${reasons} | ${per('kernels')} | ${per('graphs')} | ${per('syncs')} |`,
  );
}
