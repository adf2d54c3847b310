/**
 * The shapes that enter and leave the statistics (jobs/CONTRACTS.md "Results and statistics").
 * Pure data: no Redis, no files. The committed records come from jobs/; the derived shapes are here. `analyzeExperiment` (analyze.ts) turns an AnalysisInput into an
 * Analysis; the renderers in orchestrator/report/ only read an Analysis.
 *
 * Conventions of every number in an Analysis:
 * - a quantity that cannot be computed is `null`, never NaN or Infinity, and the reason is in
 *   `issues` or in the comparison's `reasons`;
 * - "relative" numbers are fractions (0.012 = 1.2 %) of the reference arm, computed on log ratios
 *   (see compare.ts) and shown as ratio − 1;
 * - values are in the metric's unit (`metric.name`, ms per step by default).
 */

import type { BlockSizing } from '../../jobs/block-sizing.ts';
import type { HygienePolicy } from '../../jobs/clock-hygiene.ts';
import type { FailedRep } from '../../jobs/failed-rep.ts';
import type { GateResult } from '../../jobs/gate-result.ts';
import type { GraphrtToggle } from '../../jobs/graphrt-toggles.ts';
import type { ProbeRecord } from '../../jobs/probe-record.ts';
import type { RankOutputTail } from '../../jobs/rank-output-tail.ts';
import type { RepResult } from '../../jobs/rep-result.ts';
import type { ProbeSummary } from './probe-summary.ts';
import type { Look, LookDecision } from './sequential.ts';
import type { TraceProbeSummary } from './trace-summary-types.ts';

/** The subset of jobs/plan.ts `Arm` the statistics read. */
export interface PlanArm {
  name: string;
  toggles: Record<string, boolean | string>;
  aa_of?: string;
  /** The base-reference arm: the arm named here, run from the reference build. */
  ref_of?: string;
}

/** The subset of jobs/plan.ts `PlannedBlock` the statistics read. */
export interface PlanBlock {
  index: number;
  /** Arm names in run order; each arm appears `reps` times. */
  sequence: string[];
}

/** The subset of jobs/plan.ts `Plan` the statistics read (a real Plan is assignable to it). */
export interface PlanLike {
  hash: string;
  name: string;
  design: 'ab' | 'leave-one-out' | 'sweep' | 'probe';
  toggles: string[];
  control: string;
  arms: PlanArm[];
  blocks: PlanBlock[];
  reps: number;
  /** stopping: sequential (jobs/plan.ts) */
  sequential?: { looks: number } | undefined;
  /** blocks.reps_per_block: auto, once sized (jobs/sized-plan.ts) */
  sized?: BlockSizing | undefined;
}

/** The records the statistics read are the committed ones, as jobs/ defines them. */
export type { FailedRep } from '../../jobs/failed-rep.ts';
export type { GateResult } from '../../jobs/gate-result.ts';
export type { RepResult } from '../../jobs/rep-result.ts';

export interface MetricSpec {
  name: string;
  better: 'lower' | 'higher';
  statistic: 'median' | 'mean';
}

/** A block that ended with its reps committed, and when (the order of a sequential experiment's looks). */
export interface BlockEnd {
  block: number;
  ended_at: number;
}

/** A sequential experiment's looks (orchestrator/stats/sequential-looks.ts). */
export interface SequentialOutcome {
  looks: (Look & { blocks: number[] })[];
  /** the first decisive look's decision; `continue` while the budget is not spent */
  decision: LookDecision;
  /** 1-based index of the look that decided, null while none did */
  decided_at: number | null;
  max_blocks: number;
}

export interface AnalysisInput {
  plan: PlanLike;
  /** Experiment id for the report's title; default: the reps' `experiment`, else the plan name. */
  experiment?: string;
  reps: RepResult[];
  failed: FailedRep[];
  gates: GateResult[];
  metric: MetricSpec;
  /** Smallest relative change worth reporting (0.01 = 1 %). */
  min_effect: number;
  /** Two-sided significance level; CIs are at 1 − alpha. */
  alpha: number;
  /**
   * gates.base_reference: the base arm must agree within `tolerance` (relative) with its
   * reference arm (the plan's `ref_of` arm, run from the reference `build`), and with `value`
   * when one is given.
   */
  base_reference?: { tolerance: number; value?: number; build?: ReferenceBuild };
  /** design probe: the committed probe records */
  probes?: ProbeRecord[];
  /** the device names the ranks' hello lines gave (committed attempts) */
  devices?: string[];
  /** spec.hygiene: what a rep on a throttled card is worth (default flag, jobs/clock-hygiene.ts) */
  hygiene?: HygienePolicy;
  /** stopping: sequential: the blocks that ended committed, with when (the looks' order) */
  ended?: BlockEnd[];
  /** set when the experiment ended cancelled or failed: its outcome is that, never a speed verdict */
  stopped?: StoppedExperiment | null;
  /** the last lines of the ranks of the blocks that failed (jobs/rank-output-tail.ts `failedBlocksOutput`) */
  rank_output?: RankOutputTail[];
}

/** The build the reference arm ran: its name in the spec and the commit it resolved to. */
export interface ReferenceBuild {
  name: string;
  commit: string | null;
}

/**
 * equivalent: only a sequential experiment says it (its repeated CI inside ±min_effect, sequential.ts);
 * not_testable: an arm of the comparison could not be captured in the user's program (a capture
 * blocker, jobs/capture-blocker.ts): nothing was measured to compare.
 */
export type Verdict = 'faster' | 'slower' | 'equivalent' | 'inconclusive' | 'invalid' | 'not_testable';

/**
 * What an experiment came to: a speed verdict when it ran to its end; `pass` or `fail` for a
 * capture probe (it claims no speed: its self-checks held or not); `cancelled` or `failed` when
 * it ended early — partial data never carries a speed verdict.
 */
export type Outcome = Verdict | 'pass' | 'fail' | 'cancelled' | 'failed';

/** An experiment that ended without running its plan to the end: why, as its record says. */
export interface StoppedExperiment {
  state: 'cancelled' | 'failed';
  reason: string;
  /** the failure is the user's input (a build that failed, a refused submission): exit 2, as any input error */
  user_input: boolean;
}

/** Summary of one sample; every field null when the sample cannot carry it (n < 1 or n < 2). */
export interface Descriptive {
  n: number;
  mean: number | null;
  median: number | null;
  /** Sample standard deviation (n − 1). */
  sd: number | null;
  /** Standard error of the mean, sd / √n. */
  sem: number | null;
  /** Two-sided 1 − alpha t interval of the mean. */
  ci: [number, number] | null;
  min: number | null;
  max: number | null;
  /** Coefficient of variation, sd / mean. */
  cv: number | null;
}

/** One rep's value: the configured statistic of its measured steps. */
export interface RepValue {
  block: number;
  arm: string;
  rep: number;
  position: number;
  value: number;
  /** jobs/clock-hygiene.ts: used although its card was throttled (hygiene flag or warn), and why */
  throttled?: string[];
  /** hygiene discard: how many earlier measurements of it were thrown away for a re-run */
  reruns?: number;
}

/** A toggle the arm turns on that had no effect where it ran (graphrt's `unsupported`): not measured. */
export interface UnsupportedToggle {
  toggle: GraphrtToggle;
  /** the backends of the reps that reported it */
  backends: string[];
  /** `pdl: unsupported on cpu — not measured` */
  note: string;
}

export interface ArmSummary extends Descriptive {
  arm: string;
  aa_of: string | null;
  /** toggles of this arm no rep measured: the arm's numbers are the arm without them */
  unsupported: UnsupportedToggle[];
  /** Reps the plan asked for. */
  planned: number;
  /** Planned reps that ended failed, were rejected as bad input, or never arrived. */
  missing: number;
}

/** The result of a paired test on n unit differences. */
export interface PairedTest {
  n: number;
  df: number | null;
  mean: number | null;
  sd: number | null;
  se: number | null;
  t: number | null;
  p: number | null;
  ci: [number, number] | null;
}

export interface WilcoxonResult {
  /** Sum of the ranks of the positive differences. */
  w_plus: number | null;
  p: number | null;
  method: 'exact' | 'normal' | null;
}

/** `arm` against `reference`, paired inside blocks. */
export interface Comparison {
  arm: string;
  reference: string;
  /** Units used: one per (block, k) where both arms have their k-th rep. */
  pairs: number;
  /** Each planned pair that could not be formed, with why. */
  unpaired: string[];
  /** Paired t on ln(arm / reference) per pair. */
  log_ratio: PairedTest;
  /** exp(mean log ratio) − 1 and its CI, same transform. */
  relative: { estimate: number | null; ci: [number, number] | null; se: number | null };
  /** Paired difference arm − reference in the metric's unit. */
  absolute: PairedTest;
  wilcoxon: WilcoxonResult;
  verdict: Verdict;
  /** Why the verdict is what it is, the decisive reason first. */
  reasons: string[];
  /** For an inconclusive verdict: the largest |relative change| still inside the CI. */
  bound: number | null;
  /** Smallest relative effect this comparison had 80 % power to detect at alpha. */
  mde: number | null;
  /** One sentence: "faster by 2.1 % (CI 1.6 – 2.6 %)" or "no change larger than 0.8 % at 95 %". */
  statement: string;
  /**
   * stopping: sequential, the primary comparison only: the look (1-based, Analysis.sequential.looks)
   * its numbers are from — the look that decided, else the last — or 0 before any look. Its pairs,
   * estimate and t are that look's blocks', its CIs the look's repeated CI (null where it has none),
   * and it has no p: a fixed-design p does not apply to a sequential decision (analyze.ts
   * sequentialVerdict). Absent on every other comparison.
   */
  sequential_look?: number;
}

/** A rep of the reference left out of it (reference-arm.ts), with why. */
export interface SetAsideRep {
  block: number;
  arm: string;
  rep: number;
  value: number;
  reason: string;
}

/** What the comparisons against the control were paired with (reference-arm.ts). */
export interface ReferenceChoice {
  control: string;
  /** control: the control's own reps; pooled: per pair unit, the control and its A/A twin */
  kind: 'control' | 'pooled';
  twin: string | null;
  why: string;
  set_aside: SetAsideRep[];
}

export interface GateSummary {
  name: 'input' | 'identity' | 'aa' | 'base_reference' | 'probe';
  /** null: the gate did not apply (no A/A arm, no reference given, identity off). */
  pass: boolean | null;
  message: string;
}

export interface LooRow {
  toggle: string;
  arm: string;
  /** set when all_on ran without the toggle (unsupported there): every number below is null */
  unsupported: string | null;
  /** Worth of the toggle = no_<toggle> − all_on, relative to all_on and in the metric's unit. */
  worth: number | null;
  worth_se: number | null;
  worth_rel: number | null;
  worth_rel_se: number | null;
  t: number | null;
  p: number | null;
  df: number | null;
  /** worth / (base − all_on); null when the table's share_withheld says why. */
  share: number | null;
}

export interface LooTable {
  rows: LooRow[];
  /** base − all_on, relative to all_on and in the metric's unit. */
  total: number | null;
  total_se: number | null;
  total_rel: number | null;
  /** Why no row has a share (base − all_on's CI includes zero, or it has none); null when they have. */
  share_withheld: string | null;
  /** (base − all_on) − Σ worths per unit, paired: non-zero means the toggles interact. */
  interaction: PairedTest;
  interaction_flagged: boolean;
  message: string;
}

export interface OrderEffects {
  /** Mean relative deviation at each position after block and arm effects are removed. */
  by_position: { position: number; effect: number | null; n: number }[];
  /** Per arm and position: mean relative deviation (null where the arm never ran there). */
  by_arm_position: { arm: string; position: number; effect: number | null; n: number }[];
  position_test: { F: number | null; df1: number; df2: number; p: number | null };
  interaction_test: { F: number | null; df1: number; df2: number; p: number | null };
  flagged: boolean;
  message: string;
}

/** One arm after one preceding arm in the block (carry-over.ts). */
export interface CarryOverCell {
  arm: string;
  /** the arm that ran just before */
  after: string;
  n: number;
  /** what the cell is measured against: `graph after itself`, or `graph after the others` */
  against: string;
  /** relative level of `arm` after `after` against `against` */
  effect: number | null;
  /** the same for the cell's median rep */
  median_effect: number | null;
  p: number | null;
  flagged: boolean;
}

export interface CarryOver {
  cells: CarryOverCell[];
  flagged: boolean;
  message: string;
}

export interface DriftRow {
  arm: string;
  /** Relative change per position step (log-linear slope). */
  slope: number | null;
  se: number | null;
  t: number | null;
  p: number | null;
  df: number | null;
  flagged: boolean;
}

export interface Analysis {
  experiment: string;
  /** graph arms whose capture failed in the user's program (jobs/capture-blocker.ts), one per blocker, an arm's first first; absent in older reports */
  capture_blockers?: import('../../jobs/capture-blocker.ts').CaptureBlocker[];
  /** the last lines each rank of a failed block printed (jobs/rank-output-tail.ts); absent when none failed, and in older reports */
  failed_rank_output?: RankOutputTail[];
  plan: {
    name: string;
    hash: string;
    design: PlanLike['design'];
    control: string;
    blocks: number;
    reps: number;
    /** auto sizing (jobs/block-sizing.ts): the blocks after the first, and the plan's line about them */
    block_sizing?: { sizes: number[]; startup_ms: number; lease_ms: number; statement: string };
  };
  metric: MetricSpec;
  alpha: number;
  min_effect: number;
  /**
   * The experiment's outcome: cancelled or failed when it ended early (`stopped`); a probe's pass
   * or fail; else invalid if any gate failed, else the primary comparison's verdict.
   */
  verdict: Outcome;
  /** why an experiment that ended early has no verdict (absent or null when it ran to its end) */
  stopped?: StoppedExperiment | null;
  /** When invalid: why, in the order a reader must see them (gate failures first). */
  invalid_reasons: string[];
  gates: GateSummary[];
  arms: ArmSummary[];
  /** Every arm against the control but the control, its A/A copy and the base-reference arm. */
  comparisons: Comparison[];
  /** The comparison that decides `verdict` (ab: the treatment; leave-one-out: all_on vs base). */
  primary: Comparison | null;
  /** The A/A arm against its twin, when the plan has one. */
  aa: Comparison | null;
  /** The reference the comparisons with the control used (absent in analyses written before it). */
  reference?: ReferenceChoice | null;
  /** The base arm against its reference arm (gates.base_reference), when the plan has one. */
  base_reference?: Comparison | null;
  loo: LooTable | null;
  order: OrderEffects | null;
  /** arm × preceding arm (absent in analyses written before it) */
  carry_over?: CarryOver | null;
  drift: DriftRow[];
  /** Every rep not used and why, plus other input problems; never silently empty. Cancelled reps are in `cancelled`. */
  issues: string[];
  /** Per arm, measured and cancelled reps, when `orch cancel` cut the plan short (else empty or absent). */
  cancelled?: CancelledArm[];
  values: RepValue[];
  /** the backends and devices measured on, and the toggles they lacked */
  backend: BackendSummary;
  /** design probe only: what the capture probes found */
  probe: ProbeSummary | null;
  /** the trace probe of a resident command rank: each arm's traced steps against the card's graph-node floor */
  trace?: TraceProbeSummary | null;
  /** stopping: sequential: every look and the one that decided */
  sequential?: SequentialOutcome | null;
}

/** The backends and devices the reps ran on, and the toggles some backend could not honour. */
export interface BackendSummary {
  backends: string[];
  devices: string[];
  /** per toggle, the backends that reported it unsupported */
  unsupported: { toggle: string; backends: string[] }[];
}

/** An arm's planned reps that a cancel left unmeasured. */
export interface CancelledArm {
  arm: string;
  planned: number;
  /** planned reps with a committed result */
  measured: number;
  cancelled: number;
}

/** A planned rep is its identity (jobs/rep-ref.ts). */
export type { RepRef } from '../../jobs/rep-ref.ts';
