/**
 * One paired comparison, arm against reference, and its four-valued verdict.
 *
 * The unit is ln(x / y) of a pair (pairing.ts): a ratio to the reference, so a multiplicative
 * block or drift factor shared by the pair cancels exactly and "A vs B" mirrors "B vs A". The
 * paired t gives the CI on the mean log ratio, shown as exp(·) − 1. A change counts only when
 * that CI lies wholly beyond the ±min_effect band (which also excludes 0); `better` says which
 * side is "faster". Wilcoxon's signed-rank test runs on the same units as a check that does not
 * lean on normality; a disagreement is reported, not silently resolved.
 */

import { pClause, pct, signedPct } from './format-number.ts';
import { detectableEffect } from './mde.ts';
import { pairedT, wilcoxonSignedRank } from './paired-test.ts';
import { pairArms, unpairedReasons } from './pairing.ts';
import type { Comparison, MetricSpec, PlanLike, RepValue, Verdict } from './types.ts';

export interface CompareOptions {
  metric: MetricSpec;
  alpha: number;
  min_effect: number;
}

/** Power at which `mde` is quoted. */
export const MDE_POWER = 0.8;

export function decideVerdict(ci: [number, number], better: MetricSpec['better'], min_effect: number): Verdict {
  const below = ci[1] < -min_effect;
  const above = ci[0] > min_effect;
  if (!below && !above) return 'inconclusive';
  return below === (better === 'lower') ? 'faster' : 'slower';
}

export function compareArms(
  plan: PlanLike,
  index: Map<string, RepValue>,
  arm: string,
  reference: string,
  o: CompareOptions,
): Comparison {
  const { pairs, unpaired } = pairArms(plan, index, arm, reference);
  const logs = pairs.map((p) => Math.log(p.x / p.y));
  const log_ratio = pairedT(logs, o.alpha);
  const absolute = pairedT(
    pairs.map((p) => p.x - p.y),
    o.alpha,
  );
  const wilcoxon = wilcoxonSignedRank(logs);
  const level = `${Math.round((1 - o.alpha) * 100)} %`;
  const base = { arm, reference, pairs: pairs.length, unpaired, log_ratio, absolute, wilcoxon };
  const est = log_ratio.mean === null ? null : Math.expm1(log_ratio.mean);
  if (log_ratio.ci === null || log_ratio.mean === null || log_ratio.se === null) {
    const why = `${arm} vs ${reference}: ${pairs.length} usable pair${pairs.length === 1 ? '' : 's'}; at least 2 are needed for a standard error`;
    return {
      ...base,
      relative: { estimate: est, ci: null, se: null },
      verdict: 'invalid',
      reasons: [why, ...unpairedReasons(unpaired)],
      bound: null,
      mde: null,
      statement: `invalid: ${why}`,
    };
  }
  const ci: [number, number] = [Math.expm1(log_ratio.ci[0]), Math.expm1(log_ratio.ci[1])];
  const relative = { estimate: est, ci, se: Math.exp(log_ratio.mean) * log_ratio.se };
  const verdict = decideVerdict(ci, o.metric.better, o.min_effect);
  const bound = Math.max(Math.abs(ci[0]), Math.abs(ci[1]));
  const mde = detectableEffect(pairs.length, log_ratio.sd ?? 0, o.alpha, MDE_POWER, o.min_effect);
  const ciText = `${level} CI ${signedPct(ci[0])} to ${signedPct(ci[1])}`;
  const reasons: string[] = [];
  let statement: string;
  if (verdict === 'inconclusive') {
    statement = `no change larger than ${pct(bound)} at ${level} (${ciText}, ${pairs.length} pairs)`;
    reasons.push(
      ci[0] <= 0 && ci[1] >= 0
        ? `the ${level} CI includes 0`
        : `the ${level} CI excludes 0 but reaches into the ±${pct(o.min_effect)} min_effect band`,
    );
    if (mde !== null)
      reasons.push(`this comparison could detect a change of ${pct(mde)} with ${MDE_POWER * 100} % power`);
  } else {
    const size = pct(Math.abs(est ?? 0));
    statement = `${verdict}: ${arm} is ${verdict} than ${reference} by ${size} (${ciText}, ${pairs.length} pairs)`;
    reasons.push(`the ${level} CI lies beyond the ±${pct(o.min_effect)} min_effect band`);
    if (wilcoxon.p !== null && wilcoxon.p > o.alpha) {
      reasons.push(`Wilcoxon signed-rank disagrees (${pClause(wilcoxon.p)} > ${o.alpha})`);
    }
  }
  reasons.push(...unpairedReasons(unpaired));
  return { ...base, relative, verdict, reasons, bound, mde, statement };
}
