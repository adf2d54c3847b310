/**
 * The planner (pure): a compiled spec → arms → blocks → the order of reps in each block.
 *
 * Order (`order: balanced`): a block's sequence is `reps` rounds; each round runs every arm
 * once, in the order of one row of the Williams design of the arms (jobs/williams.ts; for two
 * arms that is AB / BA, i.e. ABBA). Block b, round r uses row (o_b + r) mod R, R the number
 * of rows (n for even n arms, 2n for odd n), so rows rotate across rounds and blocks. The block's
 * offset o_b is b·reps mod R (rows continue from the previous block) — except when reps is a
 * multiple of R, where that would start every block on row 0 (every block ABBA, the same arm
 * always first: a slow first position then biases every pair the same way and inflates the A/A
 * false-positive rate); there o_b = b mod R, so blocks start on successive rows (ABBA, BAAB).
 * Guarantee, counting adjacency inside rounds (the junction between two rounds is not counted):
 *   - in a block whose reps is a multiple of R, every arm sits at every in-round position
 *     reps/n times and every ordered pair of distinct arms is adjacent exactly reps/n times;
 *   - over all blocks together the same holds whenever blocks·reps is a multiple of R.
 * `order: random`: every round is a shuffle of the arms drawn from mulberry32(seed).
 * Either way every arm appears exactly `reps` times in every block.
 */

import { type BlockSizing, groupSizes } from './block-sizing.ts';
import { referenceArmName } from './compile-builds.ts';
import { type RepsPerBlock, repsPerBlockOf } from './reps-per-block.ts';
import { mulberry32, shuffled } from './seeded-random.ts';
import type { Spec } from './spec.ts';
import { williamsRows } from './williams.ts';

export interface Arm {
  name: string;
  toggles: Record<string, boolean | string>;
  /** design sweep over a native param: the workload params this arm overrides. */
  params?: Record<string, number>;
  /** The A/A control: a copy of this arm. */
  aa_of?: string;
  /** The build (a key of spec.builds) this arm runs; none: the workload's own build. */
  build?: string;
  /** The base-reference arm: this arm's toggles run from the reference build (gates.base_reference). */
  ref_of?: string;
}

export interface PlannedBlock {
  index: number;
  /** Arm names in run order; each arm `reps` times. */
  sequence: string[];
}

export interface Plan {
  hash: string;
  name: string;
  design: Spec['design'];
  toggles: string[];
  control: string;
  arms: Arm[];
  blocks: PlannedBlock[];
  reps: number;
  ranks: number;
  placement: Spec['blocks']['placement'];
  order: Spec['order'];
  seed?: number;
  /** stopping: sequential: `blocks` is the budget; the looks' count */
  sequential?: { looks: number };
  /**
   * blocks.reps_per_block (jobs/reps-per-block.ts): auto, the blocks after the first sized once it
   * was measured; a number, the blocks after the first already grouped by it. Absent: every block `reps`.
   */
  reps_per_block?: RepsPerBlock;
  /** auto, once sized (jobs/sized-plan.ts): what the first block measured and the sizes it gave; `blocks` holds them */
  sized?: BlockSizing;
}

/** A plan's placement as the grant planner takes it: host_then_spread is host with the spread fallback. */
export function gangPlacement(placement: Plan['placement']): { placement: 'host' | 'spread'; spreadFallback?: true } {
  return placement === 'host_then_spread' ? { placement: 'host', spreadFallback: true } : { placement };
}

export function planExperiment(spec: Spec, hash: string): Plan {
  const { arms, control } = planArms(spec);
  const names = arms.map((a) => a.name);
  const count = plannedBlockCount(spec);
  const perBlock = repsPerBlockOf(spec);
  // a fixed bound groups the blocks after the first now; auto waits for the first block's measure
  const sizes =
    typeof perBlock === 'number'
      ? [spec.reps, ...groupSizes(spec.reps * (count - 1), perBlock, perBlock)]
      : Array.from({ length: count }, () => spec.reps);
  const blocks = blockSequences(names, sizes, spec.order, spec.seed ?? 0);
  return {
    hash,
    name: spec.name,
    design: spec.design,
    toggles: [...spec.toggles],
    control,
    arms,
    blocks,
    reps: spec.reps,
    ranks: spec.blocks.ranks,
    placement: spec.blocks.placement,
    order: spec.order,
    ...(spec.seed === undefined ? {} : { seed: spec.seed }),
    ...(spec.stopping?.rule === 'sequential' ? { sequential: { looks: spec.stopping.looks } } : {}),
    ...(perBlock === null ? {} : { reps_per_block: perBlock }),
  };
}

/** Blocks of `sizes[b]` reps per arm each (block b), in the spec's order: balanced or the seeded random one. */
export function blockSequences(
  names: string[],
  sizes: readonly number[],
  order: Spec['order'],
  seed: number,
): PlannedBlock[] {
  return order === 'random' ? randomSequences(names, sizes, seed) : balancedSequences(names, sizes);
}

/** The blocks a plan holds: the sequential budget, else blocks.count. */
export function plannedBlockCount(spec: Pick<Spec, 'blocks' | 'stopping'>): number {
  return spec.stopping?.rule === 'sequential' ? (spec.stopping.max_blocks ?? spec.blocks.count) : spec.blocks.count;
}

/** The arms of a design, the control arm, and the A/A copy of the control when asked. */
export function planArms(spec: Spec): { arms: Arm[]; control: string } {
  const all = (value: boolean): Record<string, boolean> => Object.fromEntries(spec.toggles.map((t) => [t, value]));
  let arms: Arm[];
  switch (spec.design) {
    case 'ab':
      arms = (spec.arms ?? []).map((a) =>
        withBuild({ name: a.name, toggles: { ...a.toggles } }, a.build ?? spec.build),
      );
      break;
    case 'leave-one-out':
      arms = [
        { name: 'base', toggles: all(false) },
        { name: 'all_on', toggles: all(true) },
        ...spec.toggles.map((t) => ({ name: `no_${t}`, toggles: { ...all(true), [t]: false } })),
      ];
      break;
    case 'sweep': {
      const sweep = spec.sweep;
      if (sweep === undefined)
        throw new Error('planArms: design sweep without a sweep section (compileSpec rejects this)');
      arms = sweep.values.map((v) =>
        sweep.param !== undefined
          ? { name: `${sweep.param}-${v}`, toggles: all(true), params: { [sweep.param]: Number(v) } }
          : { name: `${sweep.toggle}-${v}`, toggles: { ...all(true), [sweep.toggle as string]: String(v) } },
      );
      break;
    }
    case 'probe':
      // the trace probe of a resident rank traces the arms it names (compile-spec.ts completes them)
      arms =
        spec.arms === undefined
          ? [{ name: 'probe', toggles: all(true) }]
          : spec.arms.map((a) => ({ name: a.name, toggles: { ...a.toggles } }));
      break;
  }
  if (spec.design !== 'ab') arms = arms.map((a) => withBuild(a, spec.build));
  const control = spec.design === 'leave-one-out' ? 'all_on' : (arms[0] as Arm).name;
  if (spec.gates.aa) {
    const of = arms.find((a) => a.name === control) as Arm;
    arms.push({ ...structuredClone(of), name: `${control}_aa`, aa_of: control });
  }
  const ref = spec.gates.base_reference;
  if (ref !== undefined && spec.builds !== undefined) {
    // The base arm again, from the reference build, in the same blocks: the gate pairs the two.
    const base = baseArmName(spec, arms);
    const of = arms.find((a) => a.name === base) as Arm;
    arms.push({ ...structuredClone(of), name: referenceArmName(base), build: ref.build, ref_of: base });
  }
  return { arms, control };
}

const withBuild = (arm: Arm, build: string | undefined): Arm => (build === undefined ? arm : { ...arm, build });

/** The arm the base-reference gate checks: leave-one-out's all-off `base`, else the control (the first arm). */
export function baseArmName(spec: Spec, arms: readonly Arm[]): string {
  return spec.design === 'leave-one-out' ? 'base' : (arms[0] as Arm).name;
}

/** How many reps the plan of a compiled spec holds, without building it (the bound compile checks). */
export function plannedRepCount(spec: Spec): number {
  return planArms(spec).arms.length * spec.reps * plannedBlockCount(spec);
}

/** How many reps a built plan holds: every block's sequence. */
export function plannedReps(plan: Pick<Plan, 'blocks'>): number {
  return plan.blocks.reduce((n, b) => n + b.sequence.length, 0);
}

/** Williams rows (ABBA for two arms), rotating across rounds and blocks (see the header). */
export function balancedBlocks(names: string[], reps: number, count: number): PlannedBlock[] {
  return balancedSequences(
    names,
    Array.from({ length: count }, () => reps),
  );
}

/**
 * Blocks of any sizes on the Williams rows: a block whose size is a multiple of R starts on row
 * b mod R, any other continues the rows from the blocks before it (with equal sizes: the header's
 * rule, b·reps mod R).
 */
function balancedSequences(names: string[], sizes: readonly number[]): PlannedBlock[] {
  const rows = williamsRows(names.length);
  const R = rows.length;
  let before = 0;
  return sizes.map((reps, b) => {
    const offset = reps % R === 0 ? b % R : before % R;
    before += reps;
    return {
      index: b,
      sequence: Array.from({ length: reps }, (_, r) =>
        (rows[(offset + r) % R] as number[]).map((i) => names[i] as string),
      ).flat(),
    };
  });
}

/** Each round a seeded shuffle of the arms; one stream over all blocks in order. */
export function randomBlocks(names: string[], reps: number, count: number, seed: number): PlannedBlock[] {
  return randomSequences(
    names,
    Array.from({ length: count }, () => reps),
    seed,
  );
}

function randomSequences(names: string[], sizes: readonly number[], seed: number): PlannedBlock[] {
  const random = mulberry32(seed);
  return sizes.map((reps, b) => ({
    index: b,
    sequence: Array.from({ length: reps }, () => shuffled(names, random)).flat(),
  }));
}
