/**
 * How long a block is expected to hold its cards, for backfill: arms × reps × (warmup + steps)
 * × what one step took in past reps of the same workload, plus a fixed start-up cost (process
 * start, preflight, the identity gate). With no history the estimate is unknown: backfill plans
 * with a per-step guess (`plannedBlockMs`), but nothing shown to a user is made of the guess.
 * The history itself is kept by store/step-history.ts.
 */
import { createHash } from 'node:crypto';
import type { Plan } from '../../jobs/plan.ts';
import type { Spec } from '../../jobs/spec.ts';
import type { StepHistory } from '../../store/step-history.ts';

/** Backfill's guess for a workload never measured; never shown as an estimate. */
export const GUESSED_MS_PER_STEP = 5;
export const STARTUP_MS = 3000;

/** Reps of the same workload (runtime, kind, params, backend) take alike; toggles are averaged. */
export function workloadKey(spec: Spec): string {
  return createHash('sha256').update(JSON.stringify(spec.workload)).digest('hex').slice(0, 16);
}

/** What one rep of `spec` took in past reps (ms), and how many reps that rests on; null with no history. */
export function historyRepMs(spec: Spec, history: StepHistory | null): { ms: number; reps: number } | null {
  if (!history || history.n <= 0) return null;
  const stepsPerRep = spec.workload.warmup + spec.workload.steps;
  return {
    ms: history.ms_per_step * stepsPerRep,
    reps: Math.max(1, Math.round(history.n / Math.max(1, spec.workload.steps))),
  };
}

/**
 * A block's expected time on its cards from the step history, or null when none was measured.
 * `block`: the block whose reps count (a grouped or sized block holds more than `reps` per arm);
 * absent, a block of the spec's `reps`.
 */
export function expectedBlockMs(plan: Plan, spec: Spec, history: StepHistory | null, block?: number): number | null {
  const rep = historyRepMs(spec, history);
  return rep === null ? null : STARTUP_MS + repsOf(plan, block) * rep.ms;
}

/**
 * A block after the first of a sized plan (blocks.reps_per_block: auto), from what the first block
 * itself measured: its in-lease start-up and its lease per rep (jobs/block-sizing.ts `lease_ms` is a
 * block of `sizes[0]` reps per arm). Null for any other block, or a plan not sized. A sized block
 * may hold 800 reps per arm where the spec's blocks hold 18: an estimate from `reps` said such a
 * block frees its cards 40× sooner than it does.
 */
export function sizedBlockMs(plan: Plan, block: number): number | null {
  // asked for every waiting block on each grant pass: a plan not sized answers before any search
  const sized = plan.sized;
  const first = sized?.sizes[0];
  if (sized === undefined || first === undefined || first < 1 || block === plan.blocks[0]?.index) return null;
  const own = plan.blocks.find((b) => b.index === block);
  if (own === undefined) return null;
  const perRep = Math.max(sized.lease_ms - sized.startup_ms, 0) / (plan.arms.length * first);
  return sized.startup_ms + own.sequence.length * perRep;
}

/** What backfill plans with: the expected time, else the guess (`known` says which). */
export function plannedBlockMs(
  plan: Plan,
  spec: Spec,
  history: StepHistory | null,
  block?: number,
): { ms: number; known: boolean } {
  const sized = block === undefined ? null : sizedBlockMs(plan, block);
  if (sized !== null) return { ms: sized, known: true };
  const ms = expectedBlockMs(plan, spec, history, block);
  if (ms !== null) return { ms, known: true };
  const guess = (spec.workload.warmup + spec.workload.steps) * GUESSED_MS_PER_STEP;
  return { ms: STARTUP_MS + repsOf(plan, block) * guess, known: false };
}

/** The reps of `block` (every arm's), or of a block of the spec's `reps` per arm. */
function repsOf(plan: Plan, block: number | undefined): number {
  const own = block === undefined ? undefined : plan.blocks.find((b) => b.index === block);
  return own?.sequence.length ?? plan.arms.length * plan.reps;
}
