/**
 * The gates an experiment must pass before any verdict is believed: usable
 * input, byte identity of graph replay vs eager, the A/A control, and the base arm against a
 * reference build (the same arm run from that build in the same blocks, and/or a recorded
 * value). A failed gate turns every verdict invalid; its message is printed first.
 */

import { withinTolerance } from './equivalence.ts';
import { num, pClause, pct, signedPct } from './format-number.ts';
import { refusedGrants } from './refused-grants.ts';
import type { AnalysisInput, ArmSummary, Comparison, GateSummary, ReferenceBuild } from './types.ts';

export const NO_DISCRIMINATING_POWER = 'the measurement has no discriminating power';

/** `failed`: the reps not measured; a worker's refusal of their jobs is named first (refused-grants.ts). */
export function inputGate(arms: readonly ArmSummary[], failed: readonly { reason: string }[] = []): GateSummary {
  const short = arms.filter((a) => a.n < 2);
  if (short.length === 0) {
    const missing = arms.reduce((s, a) => s + a.missing, 0);
    const planned = arms.reduce((s, a) => s + a.planned, 0);
    return {
      name: 'input',
      pass: true,
      message:
        missing === 0
          ? `all ${planned} planned reps used`
          : `${planned - missing} of ${planned} planned reps used (see issues)`,
    };
  }
  const each = short.map((a) =>
    a.n === 0
      ? `arm ${a.arm} has no usable rep (${a.planned} planned, ${a.missing} failed or rejected)`
      : `arm ${a.arm} has ${a.n} usable rep of ${a.planned} planned`,
  );
  const refused = refusedGrants(failed);
  return {
    name: 'input',
    pass: false,
    message: `${refused === null ? '' : `${refused}. `}${each.join('; ')} — at least 2 per arm are needed for a standard error`,
  };
}

/**
 * The rule a replay that differs from eager most often broke (ranklib/python/orch_rank/graphs.py):
 * said with the failed gate, where the user reads it, not only in the library's docstring.
 */
export const IN_PLACE_RULE =
  'The rule: a graph holds the addresses it was captured with, so reset() and step() must write state in place (copy_, zero_, fill_, slice assignment); a new tensor (or list) bound to the same name, in reset() or outside a launch, is invisible to the replay.';

/**
 * Every rank runs the identity gate on its own outputs; the gate passes only if every rank's
 * passed. A check is one rank's gate of one arm in one block (a gate without per-rank detail, an
 * older record, is one check). A failure names, per failed gate, the first bad rank (the lowest
 * rank whose gate failed), its card, replay and output.
 */
export function identityGate(gates: AnalysisInput['gates']): GateSummary {
  if (gates.length === 0)
    return { name: 'identity', pass: null, message: 'no identity gate results (gate off or not run)' };
  const checks = gates.reduce((n, g) => n + Math.max(g.detail?.length ?? 0, 1), 0);
  const ranks = new Set(gates.flatMap((g) => (g.detail ?? []).map((d) => d.rank)));
  const perRank =
    ranks.size > 1 ? ` (${gates.length} gate(s) × ${ranks.size} ranks, every rank on its own outputs)` : '';
  const bad = gates.filter((g) => !g.pass || (g.detail ?? []).some((d) => !d.pass));
  if (bad.length === 0)
    return {
      name: 'identity',
      pass: true,
      message: `graph replay byte-identical to eager in ${checks} check(s)${perRank}`,
    };
  const each = bad.map((g) => `block ${g.block} arm ${g.arm}${firstBadRank(g)}`);
  return {
    name: 'identity',
    pass: false,
    message: `identity gate failed: graph replay differs from eager (${each.join('; ')}) — a stale captured value makes any timing meaningless. ${IN_PLACE_RULE}`,
  };
}

/** `rank 1 (card c) first differing replay 2, output logits` of a failed gate; its first differing replay alone without per-rank detail. */
function firstBadRank(g: AnalysisInput['gates'][number]): string {
  const failed = (g.detail ?? []).filter((d) => !d.pass).sort((a, b) => a.rank - b.rank);
  const d = failed[0];
  if (d === undefined) return g.first_bad_replay === null ? '' : ` first differing replay ${g.first_bad_replay}`;
  const out = typeof d.first_bad_output === 'string' ? `, output ${d.first_bad_output}` : '';
  const others = (g.detail ?? []).length > 1 ? ` (${failed.length} of ${(g.detail ?? []).length} ranks failed)` : '';
  return ` rank ${d.rank} (card ${d.card})${d.first_bad_replay === null ? '' : ` first differing replay ${d.first_bad_replay}`}${out}${others}`;
}

export function aaGate(aa: Comparison | null, alpha: number): GateSummary {
  if (aa === null) return { name: 'aa', pass: null, message: 'no A/A arm in the plan' };
  const lr = aa.log_ratio;
  const numbers = `${aa.arm} vs ${aa.reference}: ${signedPct(aa.relative.estimate)} (${Math.round((1 - alpha) * 100)} % CI ${signedPct(aa.relative.ci?.[0])} to ${signedPct(aa.relative.ci?.[1])}, t = ${num(lr.t, 3)}, ${pClause(lr.p)}, ${aa.pairs} pairs)`;
  if (aa.verdict === 'inconclusive') {
    return { name: 'aa', pass: true, message: `A/A control inconclusive as it must be: ${numbers}` };
  }
  if (aa.verdict === 'invalid') {
    return {
      name: 'aa',
      pass: false,
      message: `${NO_DISCRIMINATING_POWER}: the A/A control could not be evaluated (${aa.reasons[0] ?? 'no pairs'})`,
    };
  }
  return {
    name: 'aa',
    pass: false,
    message: `${NO_DISCRIMINATING_POWER}: an arm differs from an identical copy of itself, ${numbers}`,
  };
}

/** A part of the base-reference gate: the paired check against the reference arm, or the value check. */
interface ReferenceCheck {
  pass: boolean;
  text: string;
}

const buildLabel = (b: ReferenceBuild | undefined): string =>
  b === undefined ? 'build' : `build ${b.name}${b.commit === null ? '' : `@${b.commit.slice(0, 7)}`}`;

/**
 * The base arm against the same arm run from the reference build in the same blocks, paired:
 * an equivalence test (equivalence.ts), so noise wide enough to hide a gap fails too.
 */
function pairedCheck(
  paired: Comparison | null,
  baseArm: string,
  build: ReferenceBuild | undefined,
  tolerance: number,
  alpha: number,
): ReferenceCheck {
  const ref = `the reference ${buildLabel(build)}`;
  if (paired === null)
    return { pass: false, text: `the plan has no arm run from ${ref} to compare arm ${baseArm} with` };
  const ci = paired.relative.ci;
  if (ci === null)
    return {
      pass: false,
      text: `arm ${baseArm} could not be compared with ${ref} (${paired.reasons[0] ?? 'no pairs'})`,
    };
  const numbers = `${signedPct(paired.relative.estimate)} (${Math.round((1 - alpha) * 100)} % CI ${signedPct(ci[0])} to ${signedPct(ci[1])}, ${paired.pairs} pairs)`;
  return withinTolerance(ci, tolerance)
    ? { pass: true, text: `arm ${baseArm} is within ±${pct(tolerance)} of ${ref}: ${numbers}` }
    : { pass: false, text: `arm ${baseArm} differs from ${ref} by ${numbers}, outside ±${pct(tolerance)}` };
}

/** The older form: the base arm's mean against a recorded value of the reference build. */
function valueCheck(value: number, arms: readonly ArmSummary[], baseArm: string, tolerance: number): ReferenceCheck {
  const base = arms.find((a) => a.arm === baseArm);
  if (!base || base.mean === null)
    return { pass: false, text: `arm ${baseArm} has no usable rep to compare with the reference ${num(value)}` };
  const rel = base.mean / value - 1;
  return {
    pass: Math.abs(rel) <= tolerance,
    text: `arm ${baseArm} ${num(base.mean)} vs reference build ${num(value)}: ${signedPct(rel)} (tolerance ±${pct(tolerance)})`,
  };
}

/**
 * gates.base_reference: the paired check when the plan ran a reference arm (`paired`, or a
 * reference build named), the value check when a value is given; it passes when every check
 * that applies passes, the failing ones said first.
 */
export function baseReferenceGate(
  ref: AnalysisInput['base_reference'],
  arms: readonly ArmSummary[],
  baseArm: string,
  paired: Comparison | null = null,
  alpha = 0.05,
): GateSummary {
  if (ref === undefined)
    return { name: 'base_reference', pass: null, message: 'not applied: no gates.base_reference in the spec' };
  const checks: ReferenceCheck[] = [];
  if (paired !== null || ref.build !== undefined)
    checks.push(pairedCheck(paired, baseArm, ref.build, ref.tolerance, alpha));
  if (ref.value !== undefined) checks.push(valueCheck(ref.value, arms, baseArm, ref.tolerance));
  if (checks.length === 0)
    return {
      name: 'base_reference',
      pass: null,
      message: 'not applied: neither a reference build nor a reference value given',
    };
  const failed = checks.filter((c) => !c.pass);
  if (failed.length === 0)
    return {
      name: 'base_reference',
      pass: true,
      message: `base matches the reference: ${checks.map((c) => c.text).join('; ')}`,
    };
  const texts = [...failed, ...checks.filter((c) => c.pass)].map((c) => c.text);
  return {
    name: 'base_reference',
    pass: false,
    message: `base-reference gate failed: ${texts.join('; ')} — a base arm that does not reproduce the reference build is not a baseline`,
  };
}
