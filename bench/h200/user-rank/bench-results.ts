/**
 * Reading what a bench script of bench/h200/user-rank left in its WORK directory: the report.json
 * of an `orch submit --results WORK/NAME`, the last JSON line of a run outside orch (NAME.json),
 * and the exit line summary.txt holds for NAME; and the arithmetic the tables share. Used by
 * truth2-table.ts and counting3-table.ts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The report.json fields the tables read. */
export interface BenchReport {
  exit_code: number;
  arms: { arm: string; median: number | null }[];
  trace?: {
    floor: {
      source: string;
      ns_per_node?: number;
      reason?: string;
      node_cost?: { ns?: number; kernel_busy_ns?: number; reason?: string };
    };
    arms: {
      arm: string;
      mode: string;
      summary: {
        step_ns: number;
        busy_share: number;
        busy_ns: number;
        kernels: number;
        short_kernels: number;
        gaps_ns: number;
        edge_idle_ns: number;
        graph_step_estimate_ns: number | null;
      } | null;
      reason?: string;
      estimate_reason?: string;
    }[];
    graph_check: { estimate_ns: number; measured_ns: number; ratio: number } | null;
    message: string;
  };
}

/** The results directory of `orch submit --results WORK/NAME` (the one subdirectory holding a report.json), or null. */
export function resultsDir(work: string, name: string): string | null {
  const d = join(work, name);
  if (!existsSync(d)) return null;
  const sub = readdirSync(d).find((f) => existsSync(join(d, f, 'report.json')));
  return sub === undefined ? null : join(d, sub);
}

export function report(work: string, name: string): BenchReport | null {
  const d = resultsDir(work, name);
  return d === null ? null : (JSON.parse(readFileSync(join(d, 'report.json'), 'utf8')) as BenchReport);
}

/** The last line of WORK/NAME.json as JSON, or null. */
export function line(work: string, name: string): Record<string, number> | null {
  const file = join(work, `${name}.json`);
  if (!existsSync(file)) return null;
  const last = readFileSync(file, 'utf8').trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(last) as Record<string, number>;
  } catch {
    return null;
  }
}

/** "exit N" or "skipped ..." as WORK/summary.txt says for NAME; "not run" where it says nothing. */
export function exitOf(work: string, name: string): string {
  const m = existsSync(join(work, 'summary.txt'))
    ? readFileSync(join(work, 'summary.txt'), 'utf8').match(new RegExp(`^${name}: (exit \\d+|skipped[^\\n]*)`, 'm'))
    : null;
  return m?.[1] ?? 'not run';
}

export const armMs = (r: BenchReport | null, arm: string): number | null =>
  r?.arms.find((a) => a.arm === arm)?.median ?? null;
export const mean = (xs: (number | null | undefined)[]): number | null => {
  const ok = xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  return ok.length === 0 ? null : ok.reduce((a, b) => a + b, 0) / ok.length;
};
export const fixed = (x: number | null | undefined, d = 4): string =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(d);
export const ratio = (a: number | null, b: number | null): number | null =>
  a === null || b === null || b === 0 ? null : a / b;
