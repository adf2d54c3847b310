/**
 * The gates an experiment must pass before any verdict is believed: usable
 * input, byte identity of graph replay vs eager, the A/A control, and the base arm against a
 * reference build. A failed gate turns every verdict invalid; its message is printed first.
 */
import { num, pClause, pct, signedPct } from './format-number.ts';
import type { AnalysisInput, ArmSummary, Comparison, GateSummary } from './types.ts';

export const NO_DISCRIMINATING_POWER = 'the measurement has no discriminating power';

export function inputGate(arms: readonly ArmSummary[]): GateSummary {
  const short = arms.filter((a) => a.n < 2);
  if (short.length === 0) {
    const missing = arms.reduce((s, a) => s + a.missing, 0);
    const planned = arms.reduce((s, a) => s + a.planned, 0);
    return {
      name: 'input',
      pass: true,
      message: missing === 0 ? `all ${planned} planned reps used` : `${planned - missing} of ${planned} planned reps used (see issues)`,
    };
  }
  const each = short.map((a) =>
    a.n === 0
      ? `arm ${a.arm} has no usable rep (${a.planned} planned, ${a.missing} failed or rejected)`
      : `arm ${a.arm} has ${a.n} usable rep of ${a.planned} planned`,
  );
  return { name: 'input', pass: false, message: `${each.join('; ')} — at least 2 per arm are needed for a standard error` };
}

export function identityGate(gates: AnalysisInput['gates']): GateSummary {
  if (gates.length === 0) return { name: 'identity', pass: null, message: 'no identity gate results (gate off or not run)' };
  const bad = gates.filter((g) => !g.pass);
  if (bad.length === 0) return { name: 'identity', pass: true, message: `graph replay byte-identical to eager in ${gates.length} check(s)` };
  const each = bad.map(
    (g) => `block ${g.block} arm ${g.arm}${g.first_bad_replay === null ? '' : ` first differing replay ${g.first_bad_replay}`}`,
  );
  return {
    name: 'identity',
    pass: false,
    message: `identity gate failed: graph replay differs from eager (${each.join('; ')}) — a stale captured value makes any timing meaningless`,
  };
}

export function aaGate(aa: Comparison | null, alpha: number): GateSummary {
  if (aa === null) return { name: 'aa', pass: null, message: 'no A/A arm in the plan' };
  const lr = aa.log_ratio;
  const numbers = `${aa.arm} vs ${aa.reference}: ${signedPct(aa.relative.estimate)} (${Math.round((1 - alpha) * 100)} % CI ${signedPct(aa.relative.ci?.[0])} to ${signedPct(aa.relative.ci?.[1])}, t = ${num(lr.t, 3)}, ${pClause(lr.p)}, ${aa.pairs} pairs)`;
  if (aa.verdict === 'inconclusive') {
    return { name: 'aa', pass: true, message: `A/A control inconclusive as it must be: ${numbers}` };
  }
  if (aa.verdict === 'invalid') {
    return { name: 'aa', pass: false, message: `${NO_DISCRIMINATING_POWER}: the A/A control could not be evaluated (${aa.reasons[0] ?? 'no pairs'})` };
  }
  return {
    name: 'aa',
    pass: false,
    message: `${NO_DISCRIMINATING_POWER}: an arm differs from an identical copy of itself, ${numbers}`,
  };
}

export function baseReferenceGate(
  ref: AnalysisInput['base_reference'],
  arms: readonly ArmSummary[],
  baseArm: string,
): GateSummary {
  if (ref === undefined) return { name: 'base_reference', pass: null, message: 'no reference build value given' };
  const base = arms.find((a) => a.arm === baseArm);
  if (!base || base.mean === null) {
    return { name: 'base_reference', pass: false, message: `base-reference gate: arm ${baseArm} has no usable rep to compare with the reference ${num(ref.value)}` };
  }
  const rel = base.mean / ref.value - 1;
  const text = `arm ${baseArm} ${num(base.mean)} vs reference build ${num(ref.value)}: ${signedPct(rel)} (tolerance ±${pct(ref.tolerance)})`;
  return Math.abs(rel) <= ref.tolerance
    ? { name: 'base_reference', pass: true, message: `base matches the reference: ${text}` }
    : { name: 'base_reference', pass: false, message: `base-reference gate failed: ${text} — an all-off arm that does not reproduce the reference build is not a baseline` };
}
