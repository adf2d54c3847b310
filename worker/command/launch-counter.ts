/**
 * orch's CUPTI injection library (native/inject/, liborch_inject.so) for a resident rank: the CUDA
 * driver loads what CUDA_INJECTION64_PATH names at cuInit, and from there every launch of the
 * unmodified program is counted; the rank library reads the counts (ranklib/PROTOCOL.md "Launch
 * counts and clocks"). Only on cuda cards, and only when the spec asks (workload.run.launch_counts:
 * true; CUPTI in the process slows timed steps, so it is off by default) or the block is a trace
 * probe, which alone runs the library in trace mode (ORCH_INJECT_TRACE=1). A
 * CUDA_INJECTION64_PATH the program would get anyway (the spec's run.env, the operator's
 * ORCH_RANK_ENV) is another profiler: refused, never replaced.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { UserInputError } from '../../jobs/errors.ts';
import { INJECTION_VARIABLE } from '../../jobs/spec-schema/command-workload.ts';

/** The library's file name, beside the graphrt binary the native build makes. */
const LIBRARY = 'liborch_inject.so';

/** This host's injection library: ORCH_INJECT_LIB, else beside the worker's graphrt; null when it is not there. */
export function injectLibPath(graphrt: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const path = env.ORCH_INJECT_LIB ?? join(dirname(graphrt), LIBRARY);
  return existsSync(path) ? path : null;
}

/** The variable that puts the injection library in trace mode (native/inject orch_trace.cpp). */
export const TRACE_VARIABLE = 'ORCH_INJECT_TRACE';

export interface InjectionChoice {
  backend: 'cpu' | 'cuda';
  /** workload.run.launch_counts: count every measured step */
  counts: boolean;
  /** the block is a trace probe (BlockJob.trace_probe): no rep of it is timed */
  traceProbe: boolean;
  lib: string | null;
  /** what the program would get without orch's variables */
  programEnv: Record<string, string>;
}

/**
 * The variables a rank gets (empty: none): the library on a cuda card when the spec counts or the
 * block is a trace probe, and trace mode only for a trace probe: tracing slows every launch, so a
 * block with timed reps never runs under it.
 */
export function injectionEnv(o: InjectionChoice): Record<string, string> {
  if (o.backend !== 'cuda' || (!o.counts && !o.traceProbe) || o.lib === null) return {};
  const taken = o.programEnv[INJECTION_VARIABLE];
  if (taken !== undefined && taken !== o.lib) {
    const why = o.traceProbe ? "the trace probe traces through orch's injection library" : "orch's launch counts need it";
    throw new UserInputError('RANK_INJECTION_TAKEN', `${INJECTION_VARIABLE} is already ${taken} for this rank (another profiler's injection library, from workload.run.env or the worker's ORCH_RANK_ENV); ${why} and do not replace it`, {
      hint: o.traceProbe ? 'remove it for the probe' : 'remove it, or remove workload.run.launch_counts (counting off)',
    });
  }
  return { [INJECTION_VARIABLE]: o.lib, ...(o.traceProbe ? { [TRACE_VARIABLE]: '1' } : {}) };
}
