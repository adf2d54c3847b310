/**
 * Launch counts of a `run.mode: per_rep` program, which has no rank library to delimit its steps:
 * orch's injection library, loaded by the driver in each CUDA process of the rep, appends one line
 * of its counts at the process's exit to the file ORCH_INJECT_REPORT names (native/inject
 * orch_inject.cpp), and orch sums them and divides by the steps the rep reported (its metric lines,
 * warm-up included). The per-step numbers then include whatever the program launched outside its
 * steps (setup, the last copies out): the report says they are counted per rep ÷ steps.
 *
 * With an NVTX step range (workload.run.launch_counts_step_range) the library also delimits the
 * counts by that range (native/inject orch_nvtx.cpp) and its exit line carries one count per
 * range seen: those are the steps, the first `excluded` of them dropped as the metric's warm-up
 * lines are, and the Launches section says "per NVTX range <name>". A range never seen is a
 * reason naming the ranges that were, never zeros.
 */
import { z } from 'zod';
import type { LaunchCounts } from './orch-rank-protocol.ts';

const count = z.int().min(0);
/** What the library counts (orch_inject.h struct orch_inject_counts). */
const counted = { kernels: count, captured: count, graphs: count, memcpy: count, memset: count, syncs: count };

/** The most steps the library keeps per process (orch_nvtx.cpp kMaxSteps). */
const MAX_RANGE_STEPS = 10000;
const perStep = z.array(count).max(MAX_RANGE_STEPS);
const perStepCounted = {
  kernels: perStep,
  captured: perStep,
  graphs: perStep,
  memcpy: perStep,
  memset: perStep,
  syncs: perStep,
};
const flag = z.union([z.literal(0), z.literal(1)]);

/** One line of ORCH_INJECT_REPORT, as liborch_inject.so writes it at a process's exit. */
export const InjectExitReportSchema = z.strictObject({
  abi: z.literal(1),
  initialized: flag,
  status: z.string().max(1000),
  ...counted,
  /** only with ORCH_INJECT_STEP_RANGE: the range, whether NVTX loaded the library, and the steps it delimited */
  step_range: z.string().max(1000).optional(),
  nvtx: flag.optional(),
  range_steps: count.max(MAX_RANGE_STEPS).optional(),
  range_dropped: count.optional(),
  range_counts: z.strictObject(perStepCounted).optional(),
  /** each step's host time, push to pop (ns) */
  range_ns: z.array(z.number().min(0)).max(MAX_RANGE_STEPS).optional(),
  other_ranges: z.array(z.string().max(1000)).max(8).optional(),
});
type InjectExitReport = z.infer<typeof InjectExitReportSchema>;

/** A per_rep rep's counts: totals over its processes and the steps they are divided by. */
const DividedCountsSchema = z.strictObject({
  source: z.literal('cupti-rep'),
  /** the steps the rep reported (metric lines, warm-up included): the divisor */
  steps: z.int().positive(),
  ...counted,
});

/** A per_rep rep's counts per NVTX step range seen (warm-up dropped); captured is their total. */
const RangeCountsSchema = z.strictObject({
  source: z.literal('cupti-nvtx'),
  range: z.string().min(1).max(1000),
  /** ranges dropped as warm-up (the rep's excluded metric lines) */
  warmup: count,
  kernels: perStep.min(1),
  captured: count,
  graphs: perStep.min(1),
  memcpy: perStep.min(1),
  memset: perStep.min(1),
  syncs: perStep.min(1),
});

export const PerRepLaunchCountsSchema = z.discriminatedUnion('source', [DividedCountsSchema, RangeCountsSchema]);
export type PerRepLaunchCounts = z.infer<typeof PerRepLaunchCountsSchema>;
type NoCounts = Extract<LaunchCounts, { source: 'none' }>;

/** How the rep's steps are delimited: by the NVTX range named, the first `excluded` ranges being warm-up. */
export interface StepRange {
  name: string;
  excluded: number;
}

/** The most processes' lines one rep's report is read for. */
const MAX_REPORT_LINES = 1000;

/**
 * The rep's counts from its report file's text (null: no file, so no CUDA process loaded the
 * library), or why there are none: never zeros standing in for "not counted".
 */
export function perRepCounts(
  text: string | null,
  steps: number,
  file: string,
  range: StepRange | null = null,
): PerRepLaunchCounts | NoCounts {
  if (text === null || text.trim() === '')
    return {
      source: 'none',
      reason:
        "no process of the rep loaded orch's injection library (the CUDA driver loads it at cuInit: no CUDA in the program, or a process that ended without running its exit handlers)",
    };
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (lines.length > MAX_REPORT_LINES)
    return {
      source: 'none',
      reason: `${file}: ${lines.length} processes reported counts, more than the ${MAX_REPORT_LINES} read`,
    };
  const reports = [];
  for (const [i, line] of lines.entries()) {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      return { source: 'none', reason: `${file} line ${i + 1}: not a JSON line of orch's injection library` };
    }
    const r = InjectExitReportSchema.safeParse(json);
    if (!r.success)
      return {
        source: 'none',
        reason: `${file} line ${i + 1}: not the injection library's exit report (${r.error.issues[0]?.message ?? 'invalid'})`,
      };
    reports.push(r.data);
  }
  const live = reports.filter((r) => r.initialized === 1);
  if (live.length === 0)
    return {
      source: 'none',
      reason: `${reports[0]?.status ?? 'not counted'}${range === null ? '' : rangeSeen(reports, range.name)}`,
    };
  if (range !== null) return rangeCounts(live, range, file);
  if (steps <= 0) return { source: 'none', reason: 'the rep reported no steps to divide its counts by' };
  const sum = (k: keyof typeof counted) => live.reduce((s, r) => s + r[k], 0);
  return {
    source: 'cupti-rep',
    steps,
    kernels: sum('kernels'),
    captured: sum('captured'),
    graphs: sum('graphs'),
    memcpy: sum('memcpy'),
    memset: sum('memset'),
    syncs: sum('syncs'),
  };
}

/** What the NVTX side saw, for a rep whose counts are missing anyway: " (NVTX range "x": N steps delimited, middle step M ms)". */
function rangeSeen(reports: InjectExitReport[], name: string): string {
  if (!reports.some((r) => r.nvtx === 1)) return '';
  const ns = reports.flatMap((r) => r.range_ns ?? []);
  const n = reports.reduce((s, r) => s + (r.range_steps ?? 0), 0);
  // the middle step's time (upper middle of an even count): a sentence, not a statistic
  const middle = [...ns].sort((a, b) => a - b)[Math.floor(ns.length / 2)];
  const time = middle === undefined ? '' : `, middle step ${(middle / 1e6).toPrecision(3)} ms host time`;
  return ` (NVTX range "${name}": ${n} step${n === 1 ? '' : 's'} delimited${time})`;
}

/** The counting processes' steps of `range`, in process order, warm-up dropped; or why there are none. */
function rangeCounts(live: InjectExitReport[], range: StepRange, file: string): PerRepLaunchCounts | NoCounts {
  const name = JSON.stringify(range.name);
  const delimited = live.filter((r) => r.step_range !== undefined);
  if (delimited.length === 0)
    return {
      source: 'none',
      reason: `${file}: the injection library reported no NVTX steps (a library built before NVTX step ranges: rebuild native/)`,
    };
  if (!delimited.some((r) => r.nvtx === 1)) {
    return {
      source: 'none',
      reason: `NVTX never loaded orch's injection library, so no range ${name} was seen: the program made no NVTX call (nvtxRangePushA, torch.cuda.nvtx.range_push), or NVTX_INJECTION64_PATH did not reach it`,
    };
  }
  const steps: Record<'kernels' | 'captured' | 'graphs' | 'memcpy' | 'memset' | 'syncs', number[]> = {
    kernels: [],
    captured: [],
    graphs: [],
    memcpy: [],
    memset: [],
    syncs: [],
  };
  for (const r of delimited) {
    const c = r.range_counts;
    const n = r.range_steps ?? 0;
    if (c === undefined || Object.values(c).some((xs) => xs.length !== n))
      return { source: 'none', reason: `${file}: the NVTX step counts do not match range_steps ${n}` };
    for (const k of Object.keys(steps) as (keyof typeof steps)[]) steps[k].push(...c[k]);
  }
  const seen = steps.kernels.length;
  if (seen === 0) {
    const others = [...new Set(delimited.flatMap((r) => r.other_ranges ?? []))];
    return {
      source: 'none',
      reason: `no NVTX range ${name} was pushed and popped (or started and ended) in the rep; ranges seen: ${others.length === 0 ? 'none' : others.map((o) => JSON.stringify(o)).join(', ')}`,
    };
  }
  if (seen <= range.excluded)
    return {
      source: 'none',
      reason: `all ${seen} NVTX ranges ${name} fall in the warm-up (the rep's first ${range.excluded} steps are excluded)`,
    };
  const measured = (xs: number[]) => xs.slice(range.excluded);
  return {
    source: 'cupti-nvtx',
    range: range.name,
    warmup: range.excluded,
    kernels: measured(steps.kernels),
    captured: measured(steps.captured).reduce((s, x) => s + x, 0),
    graphs: measured(steps.graphs),
    memcpy: measured(steps.memcpy),
    memset: measured(steps.memset),
    syncs: measured(steps.syncs),
  };
}
