/**
 * The reference every comparison against the control is paired with, chosen so that one bad rep
 * of the control cannot move it.
 *
 * The control's reps are one sample of the reference's level, and every comparison against the
 * control shares them: one slow rep (a clock dip, a neighbour's burst) shifts every comparison at
 * once, in the same direction. The plan's A/A twin is a second, independent sample of the same
 * level in the same blocks, and once the A/A gate has passed (the twin does not differ from the
 * control) the two are pooled, per pair unit (block, k), as one reference:
 *
 *   ref(b, k) = exp((ln control(b, k) + ln twin(b, k)) / 2)
 *
 * which halves what any one rep can do and cuts the reference's share of each pair's variance in
 * half. A rep the other explains nothing of is set aside rather than halved: d = ln(control/twin)
 * per unit cancels the block, so a unit whose d sits more than SET_ASIDE_SDS robust sds
 * (1.4826 × MAD) from the median d holds a rep that normal noise does not explain; of the two,
 * the one farther from what the unit's other arms say about that unit (their median deviation
 * from their own medians) is set aside, with its reason, and the other stands for the unit alone.
 *
 * Without a twin, or when the A/A gate failed or could not be judged (the twin is then no copy to
 * pool with), the reference is the control's own reps, and the choice says why. The A/A and the
 * base-reference gates always judge the raw reps: they check the measurement, not the reference.
 */

import { repKey } from '../../jobs/rep-ref.ts';
import { median } from './descriptive.ts';
import { signedPct } from './format-number.ts';
import type { GateSummary, PlanLike, ReferenceChoice, RepValue, SetAsideRep } from './types.ts';

/** A normal difference lies this many robust sds from its median once in 1.7 million pairs. */
export const SET_ASIDE_SDS = 5;
/** Fewer control–twin units than this give no robust scale worth trusting: nothing is set aside. */
export const MIN_UNITS_TO_SET_ASIDE = 5;
/** MAD → sd for normal data. */
const MAD_TO_SD = 1.4826;

export interface ReferenceValues {
  choice: ReferenceChoice;
  /** the rep values with the control's replaced by the reference of its unit */
  values: RepValue[];
}

const unitKey = (v: Pick<RepValue, 'block' | 'rep'>): string => `${v.block}/${v.rep}`;

export function chooseReference(plan: PlanLike, values: readonly RepValue[], aa: GateSummary): ReferenceValues {
  const control = plan.control;
  const twin = plan.arms.find((a) => a.aa_of === control)?.name ?? null;
  const alone = (why: string): ReferenceValues => ({
    choice: { control, kind: 'control', twin, why, set_aside: [] },
    values: [...values],
  });
  if (twin === null) return alone(`the control ${control} alone: the plan has no A/A twin to pool it with`);
  if (aa.pass !== true)
    return alone(
      `the control ${control} alone: the A/A gate ${aa.pass === false ? 'failed' : 'did not apply'}, so ${twin} is not a copy to pool with`,
    );

  const ofArm = (arm: string) => new Map(values.filter((v) => v.arm === arm).map((v) => [unitKey(v), v]));
  const c = ofArm(control);
  const t = ofArm(twin);
  const { set_aside, scaleNote } = setAside(values, control, twin, c, t);
  const dropped = new Set(set_aside.map((s) => repKey(s)));
  const out = values.filter((v) => v.arm !== control);
  for (const key of new Set([...c.keys(), ...t.keys()])) {
    const kept = [c.get(key), t.get(key)].filter((v): v is RepValue => v !== undefined && !dropped.has(repKey(v)));
    if (kept.length === 0) continue;
    const value = Math.exp(kept.reduce((s, v) => s + Math.log(v.value), 0) / kept.length);
    const at = c.get(key) ?? kept[0]!;
    out.push({ block: at.block, arm: control, rep: at.rep, position: at.position, value });
  }
  const why =
    `${control} pooled with its A/A twin ${twin} per pair (geometric mean of the two reps of a block's k-th pair): the A/A gate passed, so both measure one level, ` +
    `and one rep moves the pooled reference half as much as the control alone; ${set_aside.length === 0 ? `no rep set aside (${scaleNote})` : `${set_aside.length} rep(s) set aside (${scaleNote})`}`;
  return { choice: { control, kind: 'pooled', twin, why, set_aside }, values: out };
}

interface SetAsideResult {
  set_aside: SetAsideRep[];
  scaleNote: string;
}

function setAside(
  values: readonly RepValue[],
  control: string,
  twin: string,
  c: Map<string, RepValue>,
  t: Map<string, RepValue>,
): SetAsideResult {
  const units = [...c.keys()].filter((k) => t.has(k));
  if (units.length < MIN_UNITS_TO_SET_ASIDE)
    return {
      set_aside: [],
      scaleNote: `${units.length} control–twin pairs, under the ${MIN_UNITS_TO_SET_ASIDE} an outlier test needs`,
    };
  const d = new Map(units.map((k) => [k, Math.log(c.get(k)!.value / t.get(k)!.value)]));
  const centre = median([...d.values()]);
  const scale = MAD_TO_SD * median([...d.values()].map((x) => Math.abs(x - centre)));
  const scaleNote = `outlier test: ln(${control}/${twin}) per pair more than ${SET_ASIDE_SDS} robust sds (${signedPct(Math.expm1(scale))}) from its median`;
  if (!(scale > 0)) return { set_aside: [], scaleNote };
  const level = unitLevels(values, new Set([control, twin]));
  const own = (m: Map<string, RepValue>) => median([...m.values()].map((v) => Math.log(v.value)));
  const cMid = own(c);
  const tMid = own(t);
  const set_aside: SetAsideRep[] = [];
  for (const k of units) {
    const off = d.get(k)! - centre;
    if (Math.abs(off) <= SET_ASIDE_SDS * scale) continue;
    const e = level.get(k) ?? 0;
    const cDev = Math.log(c.get(k)!.value) - cMid - e;
    const tDev = Math.log(t.get(k)!.value) - tMid - e;
    const [bad, other, dev] = Math.abs(cDev) >= Math.abs(tDev) ? [c.get(k)!, twin, cDev] : [t.get(k)!, control, tDev];
    set_aside.push({
      block: bad.block,
      arm: bad.arm,
      rep: bad.rep,
      value: bad.value,
      reason:
        `${control}/${twin} in block ${bad.block} pair ${bad.rep} is ${signedPct(Math.expm1(off))} off the median pair, ${(Math.abs(off) / scale).toFixed(1)} robust sds (over ${SET_ASIDE_SDS}); ` +
        `${bad.arm}'s rep is the one off its unit (${signedPct(Math.expm1(dev))} against the block's other arms), so ${other}'s rep stands for the reference there`,
    });
  }
  return { set_aside, scaleNote };
}

/**
 * Per pair unit, where the arms other than `skip` put it: each arm's ln value less that arm's
 * median over units, the median of those over the arms (0 where no other arm ran).
 */
function unitLevels(values: readonly RepValue[], skip: ReadonlySet<string>): Map<string, number> {
  const others = values.filter((v) => !skip.has(v.arm));
  const mid = new Map<string, number>();
  for (const arm of new Set(others.map((v) => v.arm)))
    mid.set(arm, median(others.filter((v) => v.arm === arm).map((v) => Math.log(v.value))));
  const devs = new Map<string, number[]>();
  for (const v of others) devs.set(unitKey(v), [...(devs.get(unitKey(v)) ?? []), Math.log(v.value) - mid.get(v.arm)!]);
  return new Map([...devs].map(([k, xs]) => [k, median(xs)]));
}
