/**
 * `blocks.reps_per_block`: how the blocks after the first are sized. `auto` (the default for a
 * resident command rank, whose start-up is paid once per block): from the first block's measured
 * start-up and rep time (jobs/block-sizing.ts, applied by jobs/sized-plan.ts once the scheduler
 * wrote it); a number: at most that many reps per arm in each block after the first. Either way
 * the first block runs the spec's `reps` and every arm keeps reps × blocks.count reps in all,
 * only grouped in fewer, larger blocks. Absent on any other workload: every block runs `reps`.
 */
import type { CompileProblem } from './compile-problem.ts';
import type { Spec } from './spec.ts';

export type RepsPerBlock = 'auto' | number;

/** Why `auto` cannot size this spec's blocks, or null when it can. */
export function autoSizingRefusal(spec: Spec): string | null {
  const w = spec.workload;
  if (w.runtime !== 'command' || w.run.mode !== 'resident')
    return 'auto sizes blocks by the start-up of a resident command rank (run.mode: resident), which this workload is not';
  if (spec.stopping?.rule === 'sequential')
    return 'a sequential experiment looks at block boundaries planned before it starts; auto would move them';
  if (spec.design === 'probe') return 'a probe runs its blocks as planned';
  if (spec.blocks.count < 2) return 'with one block there are no later blocks to size';
  return null;
}

/** The sizing this spec's plan uses: auto, a fixed bound, or null (every block runs `reps`). */
export function repsPerBlockOf(spec: Spec): RepsPerBlock | null {
  const asked = spec.blocks.reps_per_block;
  if (asked === undefined) return autoSizingRefusal(spec) === null ? 'auto' : null;
  if (asked !== 'auto') return asked === spec.reps ? null : asked;
  return 'auto';
}

/** The compile check: an explicit auto where it cannot work, a number below the first block's reps. */
export function checkRepsPerBlock(spec: Spec): CompileProblem[] {
  const asked = spec.blocks.reps_per_block;
  if (asked === undefined) return [];
  const path = ['blocks', 'reps_per_block'];
  if (asked === 'auto') {
    const why = autoSizingRefusal(spec);
    return why === null
      ? []
      : [
          {
            path,
            message: `reps_per_block: auto: ${why}`,
            fix: 'remove it (every block then runs `reps`) or give a number',
          },
        ];
  }
  if (asked < spec.reps)
    return [
      {
        path,
        message: `reps_per_block: ${asked} is below reps: ${spec.reps}: later blocks would be smaller than the first, and start-up a larger share of each`,
        fix: `use at least ${spec.reps}, or lower reps`,
      },
    ];
  return [];
}
