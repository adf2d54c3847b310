/**
 * `orch plan --power`: for each target effect, the reps per block and blocks that give the
 * analysis's paired test (stats/power.ts) the target power, at the noise a prior run measured
 * (stats/pair-noise.ts: its A/A comparison, else its primary one), and what that costs in wall
 * time at the prior run's rep and block start-up times (stats/run-timing.ts).
 */

import { UserInputError } from '../../jobs/errors.ts';
import { LIMITS } from '../../jobs/limits.ts';
import type { Plan } from '../../jobs/plan.ts';
import type { Spec } from '../../jobs/spec.ts';
import { pct } from '../stats/format-number.ts';
import { type PairNoise, pairNoise } from '../stats/pair-noise.ts';
import { type BlockCost, cheapestDesign, type Design, pairedPower, wallMs } from '../stats/power.ts';
import type { RunTiming } from '../stats/run-timing.ts';
import type { Analysis, PlanLike } from '../stats/types.ts';

/** A run the power plan learns from: its noise (analysis) and its card time (timing); read by results/prior-run.ts. */
export interface PriorRun {
  /** the directory, or `redis:<id>` */
  source: string;
  experiment: string;
  plan: PlanLike;
  analysis: Analysis;
  timing: RunTiming;
}

export interface PowerRow {
  /** relative effect, signed in the metric's better direction */
  effect: number;
  /** the spec as written: its reps and blocks */
  as_written: Design;
  /** the cheapest design reaching the target; null: none within orch's limits */
  design: Design | null;
  /** why there is no design, or why the number is less than it seems */
  note: string | null;
}

export interface PowerPlan {
  spec: string;
  target_power: number;
  alpha: number;
  min_effect: number;
  arms: number;
  prior: {
    source: string;
    experiment: string;
    noise: PairNoise & { within_sd: number; between_sd: number };
    timing: RunTiming;
    /** warmup + steps of the planned spec, times the arms: one round of a block */
    round_ms: number;
  };
  rows: PowerRow[];
  notes: string[];
}

export interface PowerPlanInput {
  file: string;
  spec: Spec;
  plan: Plan;
  prior: PriorRun;
  /** magnitudes (0.02: 2 %), each > 0 */
  effects: number[];
  target: number;
  alpha: number;
}

function noiseOf(prior: PriorRun): PairNoise {
  const a = prior.analysis;
  const candidates = [a.aa, a.primary, ...a.comparisons].filter((c) => c !== null && c !== undefined);
  for (const c of candidates) {
    const n = pairNoise(prior.plan, a.values, c.arm, c.reference);
    if (n !== null) return n;
  }
  throw new UserInputError(
    'PRIOR_RUN_NO_NOISE',
    `${prior.source}: no comparison of experiment ${prior.experiment} has two pairs inside one block, so its paired noise is unknown`,
    {
      hint: 'plan from a run with reps >= 2 that measured (an A/A run is best: gates: { aa: true })',
    },
  );
}

export function powerPlan(i: PowerPlanInput): PowerPlan {
  const noise = noiseOf(i.prior);
  const timing = i.prior.timing;
  const notes: string[] = [];
  if (noise.between === null)
    notes.push(
      `the prior run had pairs in one block only: between-block noise is unknown and taken as 0 (run blocks.count >= 2 to measure it)`,
    );
  if (timing.step_ms === null) notes.push('the prior run has no rep times in its events: wall times are unknown (0)');
  if (timing.startup_ms === null)
    notes.push('the prior run has no committed block with a start and a rep: block start-up taken as 0');
  const arms = i.plan.arms.length;
  const round_ms = (timing.step_ms ?? 0) * (i.spec.workload.warmup + i.spec.workload.steps) * arms;
  const cost: BlockCost = { startup_ms: timing.startup_ms ?? 0, round_ms };
  const parts = { within: noise.within, between: noise.between ?? 0 };
  const min_effect = i.spec.metric.min_effect;
  const bounds = {
    minReps: LIMITS.orch.reps.min,
    maxReps: LIMITS.orch.reps.max,
    maxBlocks: LIMITS.orch.blocks.max,
    maxPlanReps: LIMITS.orch.plan_reps.max,
    arms,
  };
  const rows = i.effects.map((m): PowerRow => {
    const effect = i.spec.metric.better === 'lower' ? -m : m;
    const q = { effect, noise: parts, alpha: i.alpha, min_effect };
    const reps = i.plan.reps;
    const blocks = i.plan.blocks.length;
    const as_written = { reps, blocks, power: pairedPower(q, reps, blocks), wall_ms: wallMs(cost, reps, blocks) };
    if (m <= min_effect)
      return {
        effect,
        as_written,
        design: null,
        note: `inside the ±${pct(min_effect)} min_effect band: no run gives it a verdict`,
      };
    const design = cheapestDesign(q, i.target, cost, bounds);
    const note =
      design !== null
        ? null
        : `not reachable within orch's limits (reps <= ${bounds.maxReps}, blocks <= ${bounds.maxBlocks}, ${bounds.maxPlanReps} reps in a plan)${parts.between > 0 ? ': the between-block noise needs more blocks than that' : ''}`;
    return { effect, as_written, design, note };
  });
  return {
    spec: i.file,
    target_power: i.target,
    alpha: i.alpha,
    min_effect,
    arms,
    prior: {
      source: i.prior.source,
      experiment: i.prior.experiment,
      noise: { ...noise, within_sd: Math.sqrt(noise.within), between_sd: Math.sqrt(noise.between ?? 0) },
      timing,
      round_ms,
    },
    rows,
    notes,
  };
}

/** 90 s, 12.5 min, 3.2 h */
export function duration(ms: number): string {
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  if (s < 7200) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

const designText = (d: Design) => `${d.reps} reps × ${d.blocks} block${d.blocks === 1 ? '' : 's'}`;

export function formatPowerPlan(p: PowerPlan): string {
  const n = p.prior.noise;
  const t = p.prior.timing;
  const lines = [
    `power plan for ${p.spec}: ${p.arms} arms, ${Math.round(p.target_power * 100)} % power at alpha ${p.alpha}, min_effect ${pct(p.min_effect)} (a verdict needs the CI beyond it)`,
    `noise from ${p.prior.source} (${n.arm} vs ${n.reference}, ${n.pairs} pairs in ${n.blocks} blocks): paired log sd within a block ${pct(n.within_sd)}, between blocks ${n.between === null ? 'unknown' : pct(n.between_sd)}`,
    `time from it: ${t.step_ms === null ? '?' : `${t.step_ms.toPrecision(3)} ms`} per step, block start-up ${t.startup_ms === null ? '?' : duration(t.startup_ms)}; one round of the arms ${duration(p.prior.round_ms)}`,
    '',
  ];
  const rows = p.rows.map((r) => [
    pct(Math.abs(r.effect)),
    r.design === null ? '-' : designText(r.design),
    r.design === null ? '-' : duration(r.design.wall_ms),
    r.design === null ? '-' : `${Math.round(r.design.power * 100)} %`,
    `${designText(r.as_written)}: ${Math.round(r.as_written.power * 100)} % power, ${duration(r.as_written.wall_ms)}`,
  ]);
  const head = ['effect', 'reps × blocks', 'wall time', 'power', 'the spec as written'];
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const fmt = (r: string[]) => r.map((x, c) => (c === r.length - 1 ? x : x.padEnd(widths[c]!))).join('  ');
  lines.push(fmt(head), ...rows.map(fmt));
  for (const r of p.rows) if (r.note !== null) lines.push(`  ${pct(Math.abs(r.effect))}: ${r.note}`);
  lines.push(
    '',
    'wall time: blocks one after another on one gang; blocks on more cards run side by side and take less.',
  );
  for (const note of p.notes) lines.push(`note: ${note}`);
  return `${lines.join('\n')}\n`;
}
