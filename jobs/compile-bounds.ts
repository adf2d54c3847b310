/**
 * The bounds no single field shows (native/limits.json): what a workload allocates on its device
 * given its params and backend, a swept param's values against graphrt's range, and the size of
 * the plan (arms × reps × blocks). Each would otherwise pass `orch validate` and fail later: on a
 * card with BAD_PARAM, or in the planner's own time and memory.
 */
import type { CompileProblem } from './compile-problem.ts';
import { deviceBytes, formatBytes, LIMITS, LIMITS_FILE, maxDeviceBytes, paramLimit } from './limits.ts';
import { plannedRepCount } from './plan.ts';
import type { Spec } from './spec.ts';

type Report = (path: CompileProblem['path'], message: string, fix?: string) => void;

/** Swept native param values within graphrt's range, each arm's params within the device bound. */
export function checkNativeBounds(spec: Spec, problem: Report): void {
  const w = spec.workload;
  if (w.runtime !== 'native' || w.kind === 'probe') return;
  const base = w.params as Record<string, number>;
  const max = maxDeviceBytes(w.backend);
  const where = w.backend === 'auto' ? `backend auto may run on ${max.backend}, whose` : `the ${max.backend} backend's`;
  const over = (params: Record<string, number>): string | null => {
    const bytes = deviceBytes(w.kind, params);
    if (bytes <= max.bytes) return null;
    return `workload ${w.kind} with ${describeParams(params)} needs ${bytes} bytes (${formatBytes(bytes)}) of device memory; ${where} limit is ${max.bytes} bytes (${formatBytes(max.bytes)})`;
  };
  const fix = `use smaller params: graphrt refuses the workload above this (BAD_PARAM; ${LIMITS_FILE} graphrt.device_bytes)`;
  const sweep = spec.design === 'sweep' ? spec.sweep : undefined;
  const swept = sweep?.param !== undefined && Object.hasOwn(base, sweep.param) ? sweep.param : undefined;
  if (sweep === undefined || swept === undefined) {
    const message = over(base);
    if (message !== null) problem(['workload', 'params'], message, fix);
    return;
  }
  const range = paramLimit(swept);
  sweep.values.forEach((v, i) => {
    if (typeof v !== 'number' || range === undefined) return;
    if (v < range.min || v > range.max) {
      problem(
        ['sweep', 'values', i],
        `${swept} ${v} is outside graphrt's range ${range.min}..${range.max}`,
        `graphrt refuses it (BAD_PARAM); use a value in ${range.min}..${range.max} (${LIMITS_FILE})`,
      );
      return;
    }
    const message = over({ ...base, [swept]: v });
    if (message !== null) problem(['sweep', 'values', i], message, fix);
  });
}

/** arms × reps × blocks within `orch.plan_reps`: the planner builds and stores every rep. */
export function checkPlanSize(spec: Spec, problem: Report): void {
  const reps = plannedRepCount(spec);
  const max = LIMITS.orch.plan_reps.max;
  if (reps > max) {
    problem(
      ['reps'],
      `the plan has ${reps} reps (arms × reps × blocks.count), more than ${max}`,
      `lower reps or blocks.count (${LIMITS_FILE} orch.plan_reps)`,
    );
  }
}

function describeParams(params: Record<string, number>): string {
  return Object.entries(params)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
}
