/**
 * The leave-one-out table: for each toggle, worth = no_<toggle> − all_on (what removing it costs,
 * in the presence of all the others), its paired se and t, and its share of base − all_on. A
 * share is withheld (null, with the reason in `share_withheld`) when base − all_on's CI includes
 * zero: a worth divided by a difference that may be nothing prints 134 % or 738 %, and means none.
 * The interaction check compares base − all_on with the sum of the worths, per unit (block, k) so
 * it is paired too: when the toggles' savings simply add, (base − all_on) − Σ worth_i is 0. Its
 * line prints both sides as means over those same units, so they are there whenever the
 * difference is, and the difference is exactly one minus the other.
 */

import { repKey } from '../../jobs/rep-ref.ts';
import { num, pClause, pct } from './format-number.ts';
import { pairedT } from './paired-test.ts';
import { occurrences } from './pairing.ts';
import type { Comparison, LooRow, LooTable, PairedTest, PlanLike, RepValue } from './types.ts';

export const LOO_BASE = 'base';
export const LOO_ALL_ON = 'all_on';
export const looArm = (toggle: string): string => `no_${toggle}`;

/**
 * Per complete unit (block, k): base − all_on and Σ (no_<toggle> − all_on). k runs over each
 * block's own count of the arms' reps, as pairArms does (pairing.ts): a block resized by
 * blocks.reps_per_block holds more than the first block's `plan.reps`.
 */
function interactionUnits(plan: PlanLike, index: Map<string, RepValue>): { total: number; sum: number }[] {
  const out: { total: number; sum: number }[] = [];
  const arms = [LOO_BASE, LOO_ALL_ON, ...plan.toggles.map(looArm)];
  for (const b of plan.blocks) {
    const reps = Math.max(0, ...arms.map((arm) => occurrences(b.sequence, arm)));
    for (let k = 0; k < reps; k++) {
      const v = (arm: string) => index.get(repKey({ block: b.index, arm, rep: k }))?.value;
      const base = v(LOO_BASE);
      const all = v(LOO_ALL_ON);
      const loo = plan.toggles.map((t) => v(looArm(t)));
      if (base === undefined || all === undefined || loo.some((x) => x === undefined)) continue;
      out.push({ total: base - all, sum: loo.reduce((s: number, x) => s + (x! - all), 0) });
    }
  }
  return out;
}

export function leaveOneOut(
  plan: PlanLike,
  index: Map<string, RepValue>,
  comparisons: readonly Comparison[],
  alpha: number,
  min_effect: number,
  allOnMean: number | null,
  unsupportedInAllOn: (toggle: string) => string | null = () => null,
): LooTable {
  const find = (arm: string) => comparisons.find((c) => c.arm === arm && c.reference === LOO_ALL_ON) ?? null;
  const total = find(LOO_BASE);
  const totalAbs = total?.absolute.mean ?? null;
  const share_withheld = shareWithheld(total?.absolute ?? null);
  const rows: LooRow[] = plan.toggles.map((toggle) => {
    // all_on did not run the toggle: no_<toggle> − all_on is noise, never the toggle's worth
    const unsupported = unsupportedInAllOn(toggle);
    const c = unsupported === null ? find(looArm(toggle)) : null;
    const worth = c?.absolute.mean ?? null;
    return {
      toggle,
      arm: looArm(toggle),
      unsupported,
      worth,
      worth_se: c?.absolute.se ?? null,
      worth_rel: c?.relative.estimate ?? null,
      worth_rel_se: c?.relative.se ?? null,
      t: c?.log_ratio.t ?? null,
      p: c?.log_ratio.p ?? null,
      df: c?.log_ratio.df ?? null,
      share: worth !== null && totalAbs !== null && share_withheld === null ? worth / totalAbs : null,
    };
  });
  const units = interactionUnits(plan, index);
  const interaction = pairedT(
    units.map((u) => u.total - u.sum),
    alpha,
  );
  const large = allOnMean !== null && interaction.mean !== null && Math.abs(interaction.mean) >= min_effect * allOnMean;
  const interaction_flagged = interaction.p !== null && interaction.p < alpha && large;
  const what = `base − all_on = ${num(meanOf(units.map((u) => u.total)))} vs Σ worths = ${num(meanOf(units.map((u) => u.sum)))} (means over the same units); difference ${num(interaction.mean)} ± ${num(interaction.se)} (${pClause(interaction.p)}, ${interaction.n} units)`;
  const message =
    interaction.n < 2
      ? `interaction check not possible: ${interaction.n} complete unit(s) with every leave-one-out arm; at least 2 are needed`
      : interaction_flagged
        ? `the toggles interact: ${what}; worths do not add up beyond ${pct(min_effect)} of all_on`
        : `the worths add up: ${what}`;
  return {
    rows,
    total: totalAbs,
    total_se: total?.absolute.se ?? null,
    total_rel: total?.relative.estimate ?? null,
    share_withheld,
    interaction,
    interaction_flagged,
    message,
  };
}

/** Why no share of base − all_on is printed, or null when base − all_on differs from zero. */
function shareWithheld(total: PairedTest | null): string | null {
  if (total === null || total.mean === null) return 'base − all_on was not measured';
  if (total.ci === null)
    return `base − all_on = ${num(total.mean)} has no CI (${total.n} pair${total.n === 1 ? '' : 's'})`;
  const [lo, hi] = total.ci;
  if (lo <= 0 && hi >= 0)
    return `base − all_on's CI (${num(lo)} to ${num(hi)}) includes zero: the toggles together make no difference this run could tell, so a share of it means nothing`;
  return null;
}

function meanOf(xs: readonly number[]): number | null {
  return xs.length === 0 ? null : xs.reduce((s, x) => s + x, 0) / xs.length;
}
