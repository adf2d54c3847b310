/**
 * orch's CUPTI injection library (native/inject/, liborch_inject.so) for a resident rank: the CUDA
 * driver loads what CUDA_INJECTION64_PATH names at cuInit, and from there every launch of the
 * unmodified program is counted; the rank library reads the counts (ranklib/PROTOCOL.md "Launch
 * counts and clocks"). Only on cuda cards, and only when the spec asks (workload.run.launch_counts:
 * true; CUPTI in the process slows timed steps, so it is off by default) or the block is a trace
 * probe, which alone runs the library in trace mode (ORCH_INJECT_TRACE=1). A
 * CUDA_INJECTION64_PATH the program would get anyway (the spec's run.env, the operator's
 * ORCH_RANK_ENV) is another profiler: refused, never replaced. A per_rep program whose steps are an
 * NVTX range (workload.run.launch_counts_step_range) also gets the library in NVTX_INJECTION64_PATH,
 * which NVTX loads at the program's first NVTX call, and the range's name; another tool's NVTX
 * library there is refused the same way.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { UserInputError } from '../../jobs/errors.ts';
import { INJECTION_VARIABLE, NVTX_INJECTION_VARIABLE } from '../../jobs/spec-schema/command-workload.ts';

/** The library's file name, beside the graphrt binary the native build makes. */
const LIBRARY = 'liborch_inject.so';

/** This host's injection library: ORCH_INJECT_LIB, else beside the worker's graphrt; null when it is not there. */
export function injectLibPath(graphrt: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const path = env.ORCH_INJECT_LIB ?? join(dirname(graphrt), LIBRARY);
  return existsSync(path) ? path : null;
}

/** The variable that puts the injection library in trace mode (native/inject orch_trace.cpp). */
export const TRACE_VARIABLE = 'ORCH_INJECT_TRACE';
/** The variable naming the NVTX range that is one step (native/inject orch_nvtx.cpp). */
export const STEP_RANGE_VARIABLE = 'ORCH_INJECT_STEP_RANGE';

export interface InjectionChoice {
  backend: 'cpu' | 'cuda';
  /** workload.run.launch_counts: count every measured step */
  counts: boolean;
  /** the block is a trace probe (BlockJob.trace_probe): no rep of it is timed */
  traceProbe: boolean;
  lib: string | null;
  /** what the program would get without orch's variables */
  programEnv: Record<string, string>;
  /** workload.run.launch_counts_step_range (per_rep): NVTX also loads the library, and this range is a step */
  stepRange?: string | null;
}

/** Refuses a variable of orch's the program would get anyway with another tool's library in it. */
function refuseTaken(variable: string, o: InjectionChoice, why: string, hint: string): void {
  const taken = o.programEnv[variable];
  if (taken === undefined || taken === o.lib) return;
  throw new UserInputError(
    'RANK_INJECTION_TAKEN',
    `${variable} is already ${taken} for this rank (another profiler's injection library, from workload.run.env or the worker's ORCH_RANK_ENV); ${why} and do not replace it`,
    { hint },
  );
}

/**
 * The variables a rank gets (empty: none): the library on a cuda card when the spec counts or the
 * block is a trace probe, and trace mode only for a trace probe: tracing slows every launch, so a
 * block with timed reps never runs under it.
 */
export function injectionEnv(o: InjectionChoice): Record<string, string> {
  if (o.backend !== 'cuda' || (!o.counts && !o.traceProbe) || o.lib === null) return {};
  const why = o.traceProbe ? "the trace probe traces through orch's injection library" : "orch's launch counts need it";
  refuseTaken(
    INJECTION_VARIABLE,
    o,
    why,
    o.traceProbe ? 'remove it for the probe' : 'remove it, or remove workload.run.launch_counts (counting off)',
  );
  const range = o.counts && !o.traceProbe && o.stepRange != null ? o.stepRange : null;
  if (range !== null)
    refuseTaken(
      NVTX_INJECTION_VARIABLE,
      o,
      `orch's NVTX step range "${range}" needs it`,
      'remove it, or remove workload.run.launch_counts_step_range (counts per rep ÷ steps)',
    );
  return {
    [INJECTION_VARIABLE]: o.lib,
    ...(o.traceProbe ? { [TRACE_VARIABLE]: '1' } : {}),
    ...(range === null ? {} : { [NVTX_INJECTION_VARIABLE]: o.lib, [STEP_RANGE_VARIABLE]: range }),
  };
}
