/**
 * From committed rep results to one value per rep, accounting for every planned rep: each one
 * is either used or named in `issues` with why (failed, bad timings, never arrived), or — when
 * cancelled — counted in its arm's cancelled summary (cancelled-reps.ts). Nothing is dropped
 * silently and nothing is counted twice.
 */

import type { HygienePolicy } from '../../jobs/clock-hygiene.ts';
import { failedKind } from '../../jobs/failed-rep.ts';
import { groupedReasonLines, type KeyedReason } from '../../jobs/grouped-reasons.ts';
import { allPlannedReps, type RepRef, repKey } from '../../jobs/rep-ref.ts';
import { isCancelled } from './cancelled-reps.ts';
import { mean, median } from './descriptive.ts';
import type { AnalysisInput, RepResult, RepValue } from './types.ts';

export interface RepValues {
  planned: RepRef[];
  values: RepValue[];
  issues: string[];
  /** Planned reps per arm that did not yield a value. */
  missing: Map<string, number>;
}

/** Why a rep's timings cannot be used, or null when they can. */
export function badTimings(r: RepResult): string | null {
  if (!Array.isArray(r.step_ms) || r.step_ms.length === 0) return 'has no measured steps';
  const i = r.step_ms.findIndex((x) => typeof x !== 'number' || !Number.isFinite(x) || x <= 0);
  if (i < 0) return null;
  const v = r.step_ms[i];
  return `step_ms[${i}] of ${r.step_ms.length} is ${String(v)} (timings must be finite and > 0)`;
}

export function repValues(input: AnalysisInput): RepValues {
  // a rep a sequential experiment did not need was never part of what it measured
  const stopped = new Set(input.failed.filter((f) => failedKind(f) === 'stopped').map((f) => repKey(f)));
  const planned = allPlannedReps(input.plan).filter((p) => !stopped.has(repKey(p)));
  const byKey = new Map(planned.map((p) => [repKey(p), p]));
  const issues: string[] = [];
  const chosen = new Map<string, RepResult>();
  for (const r of input.reps) {
    const key = repKey(r);
    if (!byKey.has(key)) {
      issues.push(`result ${key} is not a rep of the plan; not used`);
      continue;
    }
    const prev = chosen.get(key);
    if (prev) {
      const keep = r.epoch > prev.epoch ? r : prev;
      issues.push(
        `rep ${key} was committed twice (epochs ${prev.epoch} and ${r.epoch}); the later epoch ${keep.epoch} is used`,
      );
      chosen.set(key, keep);
    } else chosen.set(key, r);
  }
  const failed = new Map(input.failed.map((f) => [repKey(f), f]));
  const warned: string[] = [];
  const hygiene = { flagged: 0, discarded: 0, rerun: 0, thrownAway: 0 };
  const values: RepValue[] = [];
  const missing = new Map<string, number>();
  // identical reasons (a block's start failure on each of its reps) are said once, grouped
  const failedReps: KeyedReason[] = [];
  const miss = (arm: string) => missing.set(arm, (missing.get(arm) ?? 0) + 1);
  for (const p of planned) {
    const key = repKey(p);
    const r = chosen.get(key);
    if (!r) {
      miss(p.arm);
      const f = failed.get(key);
      // cancelled reps are summed per arm (cancelled-reps.ts), not listed one by one
      if (isCancelled(f)) continue;
      if (f === undefined) issues.push(`rep ${key} never arrived (neither committed nor failed)`);
      else failedReps.push({ key, reason: f.reason });
      continue;
    }
    const bad = badTimings(r);
    if (bad) {
      miss(p.arm);
      issues.push(`rep ${key} not used: ${bad}`);
      continue;
    }
    const runs = r.discarded_runs ?? [];
    if (runs.length > 0) hygiene.rerun += 1;
    hygiene.thrownAway += runs.filter((why) => why.length > 0).length;
    const use = usable(r, key, input.hygiene ?? 'flag', issues, warned);
    if ((r.throttled ?? []).length > 0) hygiene[use ? 'flagged' : 'discarded'] += 1;
    if (!use) {
      miss(p.arm);
      continue;
    }
    const value = input.metric.statistic === 'mean' ? mean(r.step_ms) : median(r.step_ms);
    const throttled = r.throttled ?? [];
    values.push({
      block: p.block,
      arm: p.arm,
      rep: p.rep,
      position: p.position,
      value,
      ...(throttled.length > 0 ? { throttled } : {}),
      ...(runs.length > 0 ? { reruns: runs.length } : {}),
    });
  }
  issues.push(...groupedReasonLines(failedReps));
  if (warned.length > 0)
    issues.push(`${warned.length} rep(s) ran on a throttled card and were used (hygiene: warn): ${warned.join('; ')}`);
  const counted = hygieneCounts(input.hygiene ?? 'flag', hygiene);
  if (counted !== null) issues.push(counted);
  return { planned, values, issues, missing };
}

/** One line that counts what the hygiene policy did, or null when no rep was throttled. */
function hygieneCounts(
  policy: HygienePolicy,
  n: { flagged: number; discarded: number; rerun: number; thrownAway: number },
): string | null {
  if (n.flagged + n.discarded + n.rerun === 0) return null;
  const used = policy === 'warn' ? 'used' : 'flagged';
  const rerun =
    n.rerun === 0
      ? ''
      : `, ${n.rerun} re-run at their block's end (${n.thrownAway} throttled measurement(s) thrown away)`;
  return `hygiene: ${policy}: ${n.flagged} throttled rep(s) ${used}, ${n.discarded} discarded${rerun}`;
}

/**
 * A throttled rep (jobs/clock-hygiene.ts) under the spec's hygiene policy: discard leaves it out
 * (its pair with it), flag uses it and names it, warn uses it and counts it in one line.
 */
function usable(r: RepResult, key: string, policy: HygienePolicy, issues: string[], warned: string[]): boolean {
  const why = r.throttled ?? [];
  if (why.length === 0) return true;
  const text = `the card was throttled (${why.join(', ')})`;
  if (policy === 'discard') {
    issues.push(`rep ${key} not used: ${text}; hygiene: discard`);
    return false;
  }
  if (policy === 'flag') issues.push(`rep ${key} flagged: ${text}`);
  else warned.push(`${key} (${why.join(', ')})`);
  return true;
}
