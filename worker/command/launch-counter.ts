/**
 * orch's CUPTI injection library (native/inject/, liborch_inject.so) for a resident rank: the CUDA
 * driver loads what CUDA_INJECTION64_PATH names at cuInit, and from there every launch of the
 * unmodified program is counted; the rank library reads the counts (ranklib/PROTOCOL.md "Launch
 * counts and clocks"). Only on cuda cards, and only when the spec asks (workload.run.launch_counts:
 * true; CUPTI in the process slows timed steps, so it is off by default). A
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

/**
 * The variable a rank gets (empty: none): the library on a cuda card with counts on. `programEnv`
 * is what the program would get without it.
 */
export function launchCounterEnv(o: { backend: 'cpu' | 'cuda'; on: boolean; lib: string | null; programEnv: Record<string, string> }): Record<string, string> {
  if (o.backend !== 'cuda' || !o.on || o.lib === null) return {};
  const taken = o.programEnv[INJECTION_VARIABLE];
  if (taken !== undefined && taken !== o.lib) {
    throw new UserInputError('RANK_INJECTION_TAKEN', `${INJECTION_VARIABLE} is already ${taken} for this rank (another profiler's injection library, from workload.run.env or the worker's ORCH_RANK_ENV); orch's launch counts need it and do not replace it`, {
      hint: 'remove it, or remove workload.run.launch_counts (counting off)',
    });
  }
  return { [INJECTION_VARIABLE]: o.lib };
}
