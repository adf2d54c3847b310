/**
 * Launch counts of a `run.mode: per_rep` program, which has no rank library to delimit its steps:
 * orch's injection library, loaded by the driver in each CUDA process of the rep, appends one line
 * of its counts at the process's exit to the file ORCH_INJECT_REPORT names (native/inject
 * orch_inject.cpp), and orch sums them and divides by the steps the rep reported (its metric lines,
 * warm-up included). The per-step numbers then include whatever the program launched outside its
 * steps (setup, the last copies out): the report says they are counted per rep ÷ steps.
 */
import { z } from 'zod';
import type { LaunchCounts } from './orch-rank-protocol.ts';

const count = z.int().min(0);
/** What the library counts (orch_inject.h struct orch_inject_counts). */
const counted = { kernels: count, captured: count, graphs: count, memcpy: count, memset: count, syncs: count };

/** One line of ORCH_INJECT_REPORT, as liborch_inject.so writes it at a process's exit. */
export const InjectExitReportSchema = z.strictObject({
  abi: z.literal(1),
  initialized: z.union([z.literal(0), z.literal(1)]),
  status: z.string().max(1000),
  ...counted,
});

/** A per_rep rep's counts: totals over its processes and the steps they are divided by. */
export const PerRepLaunchCountsSchema = z.strictObject({
  source: z.literal('cupti-rep'),
  /** the steps the rep reported (metric lines, warm-up included): the divisor */
  steps: z.int().positive(),
  ...counted,
});
export type PerRepLaunchCounts = z.infer<typeof PerRepLaunchCountsSchema>;

/** The most processes' lines one rep's report is read for. */
const MAX_REPORT_LINES = 1000;

/**
 * The rep's counts from its report file's text (null: no file, so no CUDA process loaded the
 * library), or why there are none: never zeros standing in for "not counted".
 */
export function perRepCounts(text: string | null, steps: number, file: string): PerRepLaunchCounts | Extract<LaunchCounts, { source: 'none' }> {
  if (text === null || text.trim() === '') return { source: 'none', reason: "no process of the rep loaded orch's injection library (the CUDA driver loads it at cuInit: no CUDA in the program, or a process that ended without running its exit handlers)" };
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (lines.length > MAX_REPORT_LINES) return { source: 'none', reason: `${file}: ${lines.length} processes reported counts, more than the ${MAX_REPORT_LINES} read` };
  const reports = [];
  for (const [i, line] of lines.entries()) {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      return { source: 'none', reason: `${file} line ${i + 1}: not a JSON line of orch's injection library` };
    }
    const r = InjectExitReportSchema.safeParse(json);
    if (!r.success) return { source: 'none', reason: `${file} line ${i + 1}: not the injection library's exit report (${r.error.issues[0]?.message ?? 'invalid'})` };
    reports.push(r.data);
  }
  const live = reports.filter((r) => r.initialized === 1);
  if (live.length === 0) return { source: 'none', reason: reports[0]?.status ?? 'not counted' };
  if (steps <= 0) return { source: 'none', reason: 'the rep reported no steps to divide its counts by' };
  const sum = (k: keyof typeof counted) => live.reduce((s, r) => s + r[k], 0);
  return { source: 'cupti-rep', steps, kernels: sum('kernels'), captured: sum('captured'), graphs: sum('graphs'), memcpy: sum('memcpy'), memset: sum('memset'), syncs: sum('syncs') };
}
