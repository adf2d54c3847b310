/**
 * analyzeExperiment: committed reps of one experiment → the Analysis every report renders.
 * Pure and deterministic: same input, same output; no I/O.
 *
 *   rep values (rep-values.ts) → per-arm summaries → the A/A copy against its twin and the base
 *   arm against its reference-build run, on the raw reps (compare.ts) → A/A, identity, input and
 *   base-reference gates (gates.ts) → the reference the comparisons with the control pair with
 *   (reference-arm.ts: the control pooled with its twin once the A/A gate passed) → paired
 *   comparisons against it → leave-one-out table, order effects, carry-over (carry-over.ts) and
 *   drift → the verdict.
 */

import { describeSizing } from '../../jobs/block-sizing.ts';
import { type CaptureBlocker, captureBlockerOf } from '../../jobs/capture-blocker.ts';
import { UserInputError } from '../../jobs/errors.ts';
import { groupedReasonLines } from '../../jobs/grouped-reasons.ts';
import { summarizeBackend } from './backend-summary.ts';
import { cancelledByArm } from './cancelled-reps.ts';
import { carryOver } from './carry-over.ts';
import { type CompareOptions, compareArms } from './compare.ts';
import { describe } from './descriptive.ts';
import { pClause, pct, signedPct } from './format-number.ts';
import { aaGate, baseReferenceGate, identityGate, inputGate } from './gates.ts';
import { LOO_ALL_ON, LOO_BASE, leaveOneOut } from './leave-one-out.ts';
import { orderAndDrift } from './order-effects.ts';
import { unpairedReasons, valueIndex } from './pairing.ts';
import { summarizeProbes } from './probe-summary.ts';
import { chooseReference } from './reference-arm.ts';
import { repValues } from './rep-values.ts';
import { compareAtBlocks, type SequentialOutcome, sequentialLooks } from './sequential-looks.ts';
import { summarizeTraceProbe } from './trace-probe.ts';
import type {
  Analysis,
  AnalysisInput,
  ArmSummary,
  Comparison,
  FailedRep,
  GateSummary,
  PlanLike,
  RepValue,
  UnsupportedToggle,
  Verdict,
} from './types.ts';

function checkOptions(input: AnalysisInput): void {
  const bad: string[] = [];
  if (!(input.alpha > 0 && input.alpha < 1)) bad.push(`alpha must be in (0, 1), got ${input.alpha}`);
  if (!(input.min_effect >= 0 && input.min_effect < 1))
    bad.push(`min_effect must be in [0, 1), got ${input.min_effect}`);
  if (!input.plan.arms.some((a) => a.name === input.plan.control))
    bad.push(`control arm "${input.plan.control}" is not an arm of the plan`);
  if (bad.length > 0)
    throw new UserInputError('ANALYSIS_INPUT', `cannot analyze ${input.plan.name}: ${bad.join('; ')}`);
}

function aggregate(comparisons: readonly Comparison[]): Verdict {
  const vs = comparisons.map((c) => c.verdict);
  if (vs.includes('invalid')) return 'invalid';
  if (vs.length > 0 && vs.every((v) => v === 'not_testable')) return 'not_testable';
  if (vs.includes('slower')) return 'slower';
  if (vs.includes('faster')) return 'faster';
  return 'inconclusive';
}

const GATE_LABEL: Record<GateSummary['name'], string> = {
  input: 'input',
  identity: 'identity',
  aa: 'A/A',
  base_reference: 'base-reference',
  probe: 'probe',
};

function invalidate(c: Comparison, reasons: readonly string[], gates: readonly string[]): Comparison {
  const why = `invalid: the ${gates.join(', ')} gate${gates.length === 1 ? '' : 's'} failed`;
  return {
    ...c,
    verdict: 'invalid',
    reasons: [...reasons, ...c.reasons],
    statement: `${why}; measured: ${c.statement}`,
  };
}

/** Per arm, the toggles its committed reps report unsupported, with the backends that said so. */
function unsupportedToggles(input: AnalysisInput): Map<string, UnsupportedToggle[]> {
  const seen = new Map<string, Map<UnsupportedToggle['toggle'], Set<string>>>();
  for (const r of input.reps) {
    for (const t of r.unsupported ?? []) {
      const arm = seen.get(r.arm) ?? new Map<UnsupportedToggle['toggle'], Set<string>>();
      seen.set(r.arm, arm.set(t, (arm.get(t) ?? new Set<string>()).add(r.backend)));
    }
  }
  const out = new Map<string, UnsupportedToggle[]>();
  for (const [arm, toggles] of seen) {
    out.set(
      arm,
      [...toggles].map(([toggle, b]) => {
        const backends = [...b].sort();
        return { toggle, backends, note: `${toggle}: unsupported on ${backends.join(', ')} — not measured` };
      }),
    );
  }
  return out;
}

export function analyzeExperiment(input: AnalysisInput): Analysis {
  const a = analyzeRan(input);
  // partial data is shown as measured, but it never decides: the outcome is how the run ended
  return input.stopped ? { ...a, verdict: input.stopped.state, stopped: input.stopped } : a;
}

function analyzeRan(input: AnalysisInput): Analysis {
  checkOptions(input);
  const { plan, alpha, min_effect, metric } = input;
  const rv = repValues(input);
  const index = valueIndex(rv.values);
  const unsupported = unsupportedToggles(input);
  const arms: ArmSummary[] = plan.arms.map((a) => {
    const xs = rv.values.filter((v) => v.arm === a.name).map((v) => v.value);
    return {
      arm: a.name,
      aa_of: a.aa_of ?? null,
      planned: rv.planned.filter((p) => p.arm === a.name).length,
      missing: rv.missing.get(a.name) ?? 0,
      unsupported: unsupported.get(a.name) ?? [],
      ...describe(xs, alpha),
    };
  });
  const backend = summarizeBackend(
    input.reps.map((r) => r.backend),
    [...(input.devices ?? []), ...(input.probes ?? []).flatMap((p) => p.ranks.map((r) => r.device))],
    arms,
  );
  if (plan.design === 'probe') return probeAnalysis(input, arms, backend);
  const opts: CompareOptions = { metric, alpha, min_effect };
  const notMeasured = (c: Comparison): Comparison => {
    const notes = (unsupported.get(c.arm) ?? []).map((u) => u.note);
    return notes.length === 0
      ? c
      : { ...c, reasons: [...c.reasons, ...notes], statement: `${c.statement} (${notes.join('; ')})` };
  };
  const blockers = captureBlockers(input.failed);
  const { aa, refArm, baseReference, gates } = measurementGates(
    input,
    index,
    arms,
    opts,
    new Set(blockers.map((b) => b.arm)),
  );
  // every comparison with the control pairs with the reference one bad rep cannot move
  const reference = chooseReference(plan, rv.values, gates.find((g) => g.name === 'aa')!);
  const refIndex = valueIndex(reference.values);
  const compare = (arm: string, ref: string) => compareArms(plan, refIndex, arm, ref, opts);
  let comparisons = plan.arms
    .filter((a) => a.name !== plan.control && a.aa_of === undefined && a.ref_of === undefined)
    .map((a) => notMeasured(compare(a.name, plan.control)));
  const isLoo = plan.design === 'leave-one-out';
  let primary: Comparison | null = isLoo ? compare(LOO_ALL_ON, LOO_BASE) : null;

  const failed = gates.filter((g) => g.pass === false);
  const invalid_reasons = failed.map((g) => g.message);
  if (failed.length > 0) {
    const names = failed.map((g) => GATE_LABEL[g.name]);
    comparisons = comparisons.map((c) => invalidate(c, invalid_reasons, names));
    primary = primary && invalidate(primary, invalid_reasons, names);
  }
  // a capture blocker: its arm's comparisons are not testable (the other arms' stand as measured)
  if (blockers.length > 0) {
    comparisons = comparisons.map((c) => notTestable(c, blockers));
    primary = primary && notTestable(primary, blockers);
  }
  // ab: the treatment against the control is the primary comparison, the same object as listed.
  if (plan.design === 'ab') primary = comparisons[0] ?? null;
  const sequential =
    plan.sequential !== undefined && primary !== null
      ? sequentialLooks({
          plan,
          values: reference.values,
          ended: input.ended ?? [],
          arm: primary.arm,
          reference: primary.reference,
          metric,
          alpha,
          min_effect,
        })
      : null;
  if (sequential !== null && primary !== null && primary.verdict !== 'invalid') {
    // the look's numbers: its blocks alone, as sequentialLooks compared them
    const { arm, reference: ref } = primary;
    const atLook = (blocks: readonly number[]) => compareAtBlocks(plan, reference.values, blocks, arm, ref, opts);
    primary = notMeasured(sequentialVerdict(primary, sequential, atLook, opts));
    // ab lists its primary comparison first: the list shows the sequential verdict too
    if (plan.design === 'ab') comparisons = [primary, ...comparisons.slice(1)];
  }
  const verdict: Verdict = invalid_reasons.length > 0 ? 'invalid' : primary ? primary.verdict : aggregate(comparisons);
  if (verdict === 'invalid' && invalid_reasons.length === 0) {
    const culprit = primary ?? comparisons.find((c) => c.verdict === 'invalid');
    invalid_reasons.push(culprit?.reasons[0] ?? 'no comparison could be made');
  }
  const allOn = arms.find((a) => a.arm === LOO_ALL_ON)?.mean ?? null;
  const { order, drift } = orderAndDrift(rv.values, alpha, min_effect);
  return {
    experiment: input.experiment ?? input.reps[0]?.experiment ?? plan.name,
    plan: planSummary(plan),
    metric,
    alpha,
    min_effect,
    verdict,
    invalid_reasons,
    gates,
    arms,
    comparisons,
    primary,
    aa,
    reference: reference.choice,
    ...(refArm ? { base_reference: baseReference } : {}),
    loo: isLoo
      ? leaveOneOut(
          plan,
          refIndex,
          comparisons,
          alpha,
          min_effect,
          allOn,
          (t) => unsupported.get(LOO_ALL_ON)?.find((u) => u.toggle === t)?.note ?? null,
        )
      : null,
    order,
    carry_over: carryOver(plan, rv.values, alpha, min_effect),
    drift,
    issues: rv.issues,
    cancelled: cancelledByArm(rv.planned, input),
    values: rv.values,
    backend,
    probe: null,
    sequential,
    capture_blockers: blockers,
    ...failedRankOutput(input),
  };
}

/** The failed ranks' last lines, passed on as they were recorded; nothing when no rank failed. */
function failedRankOutput(input: AnalysisInput): Pick<Analysis, 'failed_rank_output'> {
  return input.rank_output?.length ? { failed_rank_output: input.rank_output } : {};
}

/**
 * The capture blockers among the failure records, arm by arm from its first rep's record (the
 * arm's every rep failed with it, jobs/capture-blocker.ts): the one its capture stopped at, then
 * the others the rank library's audit met in the same body.
 */
export function captureBlockers(
  failed: readonly Pick<FailedRep, 'arm' | 'reason' | 'block' | 'rep' | 'other_blockers'>[],
): CaptureBlocker[] {
  const out = new Map<string, CaptureBlocker[]>();
  for (const f of [...failed].sort((a, b) => a.block - b.block || a.rep - b.rep)) {
    if (out.has(f.arm)) continue;
    const b = captureBlockerOf(f.arm, f.reason);
    if (b !== null) out.set(f.arm, [b, ...(f.other_blockers ?? []).map((o) => ({ arm: f.arm, ...o }))]);
  }
  return [...out.values()].flat();
}

/** A comparison with a blocked arm on either side: not testable, saying which capture failed and where. */
function notTestable(c: Comparison, blockers: readonly CaptureBlocker[]): Comparison {
  const hit = blockers.filter((b) => b.arm === c.arm || b.arm === c.reference);
  if (hit.length === 0) return c;
  const why = hit.map(
    (b) => `arm ${b.arm}: capture failed${b.frame === null ? '' : ` at ${b.frame.file}:${b.frame.line}`}: ${b.message}`,
  );
  // the statement names the arm, the reason says what failed where (report.md prints both on one line)
  return {
    ...c,
    verdict: 'not_testable',
    reasons: [...why, ...c.reasons],
    statement: `not testable: the capture of arm ${[...new Set(hit.map((b) => b.arm))].join(' and ')} failed in the program (Capture blockers)`,
  };
}

/**
 * The gates, with the two comparisons that are checks on the measurement, not treatments: the A/A
 * copy and the base-reference arm, each compared with the arm it copies, on the raw reps.
 */
function measurementGates(
  input: AnalysisInput,
  index: Map<string, RepValue>,
  arms: readonly ArmSummary[],
  opts: CompareOptions,
  blocked: ReadonlySet<string> = new Set(),
) {
  const { plan, alpha } = input;
  const aaArm = plan.arms.find((a) => a.aa_of !== undefined);
  const aa = aaArm ? compareArms(plan, index, aaArm.name, aaArm.aa_of!, opts) : null;
  const refArm = plan.arms.find((a) => a.ref_of !== undefined);
  const baseReference = refArm ? compareArms(plan, index, refArm.ref_of!, refArm.name, opts) : null;
  const baseArm = refArm?.ref_of ?? (plan.arms.some((a) => a.name === LOO_BASE) ? LOO_BASE : plan.control);
  const gates = [
    identityGate(input.gates),
    aaGate(aa, alpha),
    baseReferenceGate(input.base_reference, arms, baseArm, baseReference, alpha),
    inputGate(
      arms.filter((a) => !blocked.has(a.arm)),
      input.failed,
    ),
  ];
  return { aa, refArm, baseReference, gates };
}

/**
 * A sequential experiment's primary comparison is the look its verdict rests on: the look that
 * decided, else the last (the budget spent without a decisive one, or the looks so far). Its pairs,
 * estimate, t and Wilcoxon statistic are of that look's blocks (`atLook`), its CIs the look's
 * repeated CI (log and relative scale; null where the look has none), and it has no p, no CI of the
 * difference and no mde: those are fixed-design numbers, not what the looks kept alpha for, and
 * every output that prints a comparison (report.md, CSV, JUnit, GitHub, dashboard, nightly rows)
 * would print them beside the sequential verdict. The fixed-design view over every committed block
 * (blocks that ended after the deciding look included) is kept as a reason, said as such.
 */
function sequentialVerdict(
  c: Comparison,
  s: SequentialOutcome,
  atLook: (blocks: readonly number[]) => Comparison,
  o: CompareOptions,
): Comparison {
  const k = s.decided_at ?? s.looks.length;
  const look = k === 0 ? null : s.looks[k - 1]!;
  const at = look === null ? c : atLook(look.blocks);
  const lr = at.log_ratio;
  const rciText = look?.rci ? `repeated CI ${signedPct(look.rci[0])} to ${signedPct(look.rci[1])}` : 'no repeated CI';
  const where =
    look === null
      ? 'no look yet'
      : `look ${k} of ${s.looks.length}, ${look.blocks.length} of ${s.max_blocks} blocks, ${look.pairs} pairs, boundary z ${look.boundary?.toFixed(2) ?? 'none'}`;
  const level = `${Math.round((1 - o.alpha) * 100)} %`;
  const fixedCi =
    c.relative.ci === null ? 'no CI' : `${level} CI ${signedPct(c.relative.ci[0])} to ${signedPct(c.relative.ci[1])}`;
  const fixedView = `not decided on: the fixed-design view of all ${c.pairs} committed pairs is ${signedPct(c.relative.estimate)} (${fixedCi}, ${pClause(c.log_ratio.p)})`;
  const numbers: Comparison = {
    ...at,
    relative: { ...at.relative, estimate: look?.estimate ?? null, ci: look?.rci ?? null },
    log_ratio: {
      ...lr,
      p: null,
      ci:
        look?.rci && look.critical !== null && lr.mean !== null && lr.se !== null
          ? [lr.mean - look.critical * lr.se, lr.mean + look.critical * lr.se]
          : null,
    },
    absolute: { ...at.absolute, p: null, ci: null },
    wilcoxon: { ...at.wilcoxon, p: null },
    bound: look?.rci ? Math.max(Math.abs(look.rci[0]), Math.abs(look.rci[1])) : null,
    mde: null,
    sequential_look: k,
  };
  const unpaired = unpairedReasons(at.unpaired);
  if (look === null || look.rci === null || s.decision === 'continue' || s.decision === 'inconclusive') {
    const none = look === null ? 'no look yet' : `${s.looks.length} look(s), none decisive`;
    return {
      ...numbers,
      verdict: 'inconclusive',
      reasons: [`sequential: ${none}`, fixedView, ...unpaired],
      statement: `inconclusive (sequential: ${none}; ${look === null ? 'no repeated CI' : `${rciText} at ${where}`})`,
    };
  }
  const statement =
    s.decision === 'equivalent'
      ? `equivalent: ${c.arm} is within ±${pct(o.min_effect)} of ${c.reference} (${rciText}; ${where})`
      : `${s.decision}: ${c.arm} is ${s.decision} than ${c.reference} by ${pct(Math.abs(look.estimate ?? 0))} (${rciText}; ${where})`;
  return {
    ...numbers,
    verdict: s.decision,
    reasons: [`sequential: decided at ${where}`, fixedView, ...unpaired],
    statement,
  };
}

/**
 * design probe: no step is timed, so no comparison, no A/A and no input gate; the probe gate
 * passes when every planned probe rep committed and every probe passed on every rank.
 */
function probeAnalysis(input: AnalysisInput, arms: ArmSummary[], backend: Analysis['backend']): Analysis {
  const { plan } = input;
  const planned = plan.blocks.reduce((s, b) => s + b.sequence.length, 0);
  const traceProbe = (input.probes ?? []).some((r) => r.kind === 'trace');
  // a trace request captures a graph arm as a rep does: its capture blocker is a finding (the
  // arm not traced, its reps not missing ones), the other arms traced
  const blockers = captureBlockers(input.failed);
  // an arm's blockers in one reason, the one its capture stopped at first
  const blockedArms = new Map<string, string>();
  for (const b of blockers) {
    const said = `capture failed${b.frame === null ? '' : ` at ${b.frame.file}:${b.frame.line}`}: ${b.message}`;
    const before = blockedArms.get(b.arm);
    blockedArms.set(b.arm, before === undefined ? said : `${before}; ${said}`);
  }
  const blockedReps = input.failed.filter((f) => blockedArms.has(f.arm)).length;
  const probe = traceProbe ? null : summarizeProbes(planned, input.probes ?? []);
  const trace = traceProbe
    ? summarizeTraceProbe(
        planned - blockedReps,
        plan.arms.map((a) => a.name),
        input.probes ?? [],
        blockedArms,
      )
    : null;
  const measured = new Set((input.probes ?? []).map((r) => `${r.block}/${r.arm}/${r.rep}`));
  const probeGate = (trace ?? probe) as { pass: boolean; message: string };
  const gates: GateSummary[] = [
    identityGate(input.gates),
    { name: 'probe', pass: probeGate.pass, message: probeGate.message },
  ];
  const invalid_reasons = gates.filter((g) => g.pass === false).map((g) => g.message);
  const issues = groupedReasonLines(
    input.failed
      .filter((f) => !measured.has(`${f.block}/${f.arm}/${f.rep}`))
      .map((f) => ({ key: `${f.block}/${f.arm}/${f.rep}`, reason: f.reason })),
    { noun: 'probe rep' },
  );
  return {
    experiment: input.experiment ?? input.reps[0]?.experiment ?? plan.name,
    plan: planSummary(plan),
    metric: input.metric,
    alpha: input.alpha,
    min_effect: input.min_effect,
    // a probe claims no speed: its self-checks held, or not; an arm it could not capture leaves it not testable
    verdict: invalid_reasons.length > 0 ? 'fail' : blockers.length > 0 ? 'not_testable' : 'pass',
    invalid_reasons,
    gates,
    arms: arms.map((a) => ({
      ...a,
      missing: Math.max(0, a.planned - (input.probes ?? []).filter((r) => r.arm === a.arm).length),
    })),
    comparisons: [],
    primary: null,
    aa: null,
    loo: null,
    order: null,
    drift: [],
    issues,
    values: [],
    backend,
    probe,
    ...(trace === null ? {} : { trace }),
    capture_blockers: blockers,
    ...failedRankOutput(input),
  };
}

/** The plan as report.json says it: its blocks as run, and how auto sizing grouped them (jobs/block-sizing.ts). */
function planSummary(plan: PlanLike): Analysis['plan'] {
  const s = plan.sized;
  return {
    name: plan.name,
    hash: plan.hash,
    design: plan.design,
    control: plan.control,
    blocks: plan.blocks.length,
    reps: plan.reps,
    ...(s === undefined
      ? {}
      : {
          block_sizing: {
            sizes: s.sizes,
            startup_ms: s.startup_ms,
            lease_ms: s.lease_ms,
            statement: describeSizing(plan.arms.length, s),
          },
        }),
  };
}
