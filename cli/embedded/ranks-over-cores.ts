/**
 * The embedded default on a machine without a visible GPU runs each rank (graphrt, or a command) as a process
 * on a cpu card of its own. More ranks per block than the machine has cores time-share the cores:
 * a rank's step then waits on the OS scheduler, the gang's step time (its slowest rank's) measures
 * the preemptions, and a comparison of arms is a comparison of scheduling luck. So it is refused,
 * with the fix, before anything runs; ORCH_CPU_CARDS, named explicitly, is the user saying the run
 * only checks that the spec works, and it then runs with a loud warning instead.
 */

import type { Card } from '../../jobs/card.ts';
import { UserInputError } from '../../jobs/errors.ts';

export interface RanksOverCores {
  /** the spec file, for the message */
  file: string;
  ranks: number;
  cards: readonly Pick<Card, 'backend'>[];
  cores: number;
  /** ORCH_CPU_CARDS as the user set it (undefined or '' when not set) */
  explicitCpuCards: string | undefined;
}

/** Throws RANKS_OVER_CORES, returns a warning when ORCH_CPU_CARDS overrides it, else null. */
export function checkRanksOverCores(c: RanksOverCores): string | null {
  const cpuOnly = c.cards.length > 0 && c.cards.every((card) => card.backend === 'cpu');
  if (!cpuOnly || c.ranks <= c.cores) return null;
  const what = `${c.file}: blocks.ranks ${c.ranks} on this machine's ${c.cores} CPU core${c.cores === 1 ? '' : 's'} (no GPU is visible, so each rank is a process on a cpu card: graphrt's, or your command): ${c.ranks} processes time-share ${c.cores} cores, and every step time would measure the OS scheduler, not the workload`;
  if (c.explicitCpuCards !== undefined && c.explicitCpuCards !== '') {
    return `WARNING: ${what}. ORCH_CPU_CARDS=${c.explicitCpuCards} runs it anyway: use this run to check that the spec works, never its timings.`;
  }
  throw new UserInputError('RANKS_OVER_CORES', what, {
    hint: `set blocks.ranks to at most ${c.cores} in ${c.file}, or run it on a cluster whose hosts have ${c.ranks} GPUs (export REDIS_URL; orch serve and orch worker); to check only that the spec works, ORCH_CPU_CARDS=${c.ranks} runs it with a warning`,
  });
}
