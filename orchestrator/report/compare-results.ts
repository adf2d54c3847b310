/**
 * `orch compare A B`: two finished experiments compared after the fact. First whether they are
 * comparable at all — the same workload (the hash of the spec's workload section), card model
 * and driver — and what differs; a different workload is refused, and so are two runs inside
 * Slurm allocations on different nodes unless both specs or `allowNodeChange` allow it. Then each arm both ran,
 * unpaired, with blocks as the unit: Welch's t on the log of the arm's block means in A against
 * those in B, reported as the ratio B/A − 1 (stats/log-ratio.ts). The node policy is each run's spec's `across_runs.allow_node_change` (both must allow it),
 * which `allowNodeChange` (the CLI's `--allow-node-change`) overrides. That is much weaker than a paired run, where both builds share every block and the
 * block-to-block drift cancels: the comparison says by how much, as the ratio of the unpaired to
 * the paired CI width within one of the two runs (same blocks, same arms), and prints the one
 * spec that would measure it paired (jobs/two-build-spec.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { UserInputError } from '../../jobs/errors.ts';
import { checkStored } from '../../jobs/parse-stored.ts';
import { AcrossRunsOfSpecSchema, allowsNodeChange } from '../../jobs/spec-schema/across-runs.ts';
import { twoBuildSpec } from '../../jobs/two-build-spec.ts';
import { mean } from '../stats/descriptive.ts';
import { num, signedPct } from '../stats/format-number.ts';
import { logRatio } from '../stats/log-ratio.ts';
import type { Analysis, RepValue } from '../stats/types.ts';
import { pairedHalfWidth, type WelchTest, welchT } from '../stats/welch.ts';
import type { Provenance } from './provenance.ts';
import { type ResultsDir, readResultsDir } from './results-dir.ts';

export interface ArmComparison {
  arm: string;
  /** The commit the arm ran in A and in B (null: the workload's own build, commit unknown). */
  commits: [string | null, string | null];
  blocks: [number, number];
  /** Welch's t on the log of block means, B − A: ln of the ratio B/A (stats/log-ratio.ts). */
  welch: WelchTest;
  /** B/A − 1 and its CI, back-transformed from the log scale: never below −100 %. */
  relative: { estimate: number | null; ci: [number, number] | null };
}

export interface CompareResult {
  a: string;
  b: string;
  differences: string[];
  arms: ArmComparison[];
  /** Unpaired / paired CI width of the same two arms inside one run, when computable. */
  pairing: { run: string; arms: [string, string]; ratio: number | null; message: string } | null;
  paired_spec: string | null;
  text: string;
}

/** An arm's mean per block it has values in, by block index (ascending). */
const blockMeanByBlock = (values: readonly RepValue[], arm: string): Map<number, number> => {
  const by = new Map<number, number[]>();
  for (const v of values) if (v.arm === arm) by.set(v.block, [...(by.get(v.block) ?? []), v.value]);
  return new Map([...by.entries()].sort((x, y) => x[0] - y[0]).map(([block, xs]) => [block, mean(xs)]));
};

const blockMeans = (values: readonly RepValue[], arm: string): number[] => [...blockMeanByBlock(values, arm).values()];

const cardsOf = (p: Provenance | undefined, key: 'name' | 'driver') =>
  [...new Set((p?.cards ?? []).map((c) => c[key] ?? `${c.backend} (unnamed)`))].sort().join(', ') || 'unknown';

function armCommit(r: ResultsDir, arm: string): string | null {
  const build = r.summary.plan.arms.find((a) => a.name === arm)?.build;
  if (build === undefined) return null;
  return r.summary.analysis.provenance?.builds.find((b) => b.name === build)?.commit ?? null;
}

/**
 * The paired and unpaired CI width of one run's primary comparison, blocks as the unit: both over
 * the blocks where both arms have values, paired by block index (a block one arm lacks is left
 * out of both, never paired with another block by its place in the list).
 */
export function pairingRatio(
  run: string,
  analysis: Pick<Analysis, 'primary' | 'values'>,
  alpha: number,
): CompareResult['pairing'] {
  const primary = analysis.primary;
  if (primary === null) return null;
  const ref = blockMeanByBlock(analysis.values, primary.reference);
  const arm = blockMeanByBlock(analysis.values, primary.arm);
  const shared = [...ref.keys()].filter((block) => arm.has(block));
  const a = shared.map((block) => ref.get(block)!);
  const b = shared.map((block) => arm.get(block)!);
  const arms: [string, string] = [primary.reference, primary.arm];
  const alone = ref.size + arm.size - 2 * shared.length;
  const leftOut = alone === 0 ? '' : ` (${alone} block(s) with only one of the two left out)`;
  const paired = pairedHalfWidth(
    a.map((x, i) => b[i]! - x),
    alpha,
  );
  const unpaired = welchT(a, b, alpha);
  const uw = unpaired.ci === null ? null : (unpaired.ci[1] - unpaired.ci[0]) / 2;
  if (paired === null || uw === null) {
    return {
      run,
      arms,
      ratio: null,
      message: `the paired and unpaired CI widths of ${arms[1]} vs ${arms[0]} in ${run} cannot both be computed (${shared.length} block(s) with both${leftOut}); an unpaired comparison of two runs cannot remove block-to-block drift at all`,
    };
  }
  const ratio = uw / paired;
  return {
    run,
    arms,
    ratio,
    message:
      `in ${run}, ${arms[1]} vs ${arms[0]} over the same ${shared.length} blocks${leftOut}: unpaired (Welch on block means) the CI is ±${num(uw)}, paired within blocks ±${num(paired)}, ${num(ratio, 3)}× as wide` +
      (ratio > 1
        ? ` — pairing removed that much of the block-to-block variance there`
        : ` — this run had little block-to-block drift to remove`) +
      `; across two runs, drift between them is in the difference unseen, and no width can show it`,
  };
}

/** The nodes a run's Slurm workers ran on, or null when none ran under Slurm. */
const slurmNodes = (p: Provenance): string | null =>
  p.slurm?.length ? [...new Set(p.slurm.map((s) => s.node))].sort().join(', ') : null;

/** The run's spec document (results/<id>/spec.yaml, as registered). */
const specDoc = (dir: string): Record<string, unknown> =>
  parse(readFileSync(join(dir, 'spec.yaml'), 'utf8')) as Record<string, unknown>;

/** The runs (of A and B) whose spec does not allow a node change; [] when both do. */
function specsRefusingNodeChange(dirs: readonly string[]): string[] {
  return dirs.filter(
    (dir) =>
      !allowsNodeChange(checkStored(AcrossRunsOfSpecSchema, specDoc(dir), `${join(dir, 'spec.yaml')} (across_runs)`)),
  );
}

export function compareResults(
  dirA: string,
  dirB: string,
  alpha = 0.05,
  opts: { allowNodeChange?: boolean } = {},
): CompareResult {
  const A = readResultsDir(dirA);
  const B = readResultsDir(dirB);
  const pa = A.summary.analysis.provenance;
  const pb = B.summary.analysis.provenance;
  const differences: string[] = [];
  if (pa === undefined || pb === undefined) {
    throw new UserInputError(
      'COMPARE_NOT_COMPARABLE',
      `${pa === undefined ? dirA : dirB} records no provenance (written by an orch before it did), so whether the two measured the same workload cannot be checked`,
      {
        hint: 'rerun the experiment with this orch',
      },
    );
  }
  if (pa.workload_hash !== pb.workload_hash) {
    throw new UserInputError(
      'COMPARE_NOT_COMPARABLE',
      `the two runs measured different workloads: workload hash ${pa.workload_hash.slice(0, 12)} (${dirA}) vs ${pb.workload_hash.slice(0, 12)} (${dirB}); their numbers are not comparable`,
      {
        hint: 'compare runs of the same workload section (diff their spec.yaml files), or measure both in one spec',
      },
    );
  }
  const [na, nb] = [slurmNodes(pa), slurmNodes(pb)];
  if (na !== null && nb !== null && na !== nb) {
    const refusing = opts.allowNodeChange === true ? [] : specsRefusingNodeChange([dirA, dirB]);
    if (refusing.length > 0) {
      throw new UserInputError(
        'COMPARE_NOT_COMPARABLE',
        `the two runs ran on different Slurm nodes: ${na} (${dirA}) vs ${nb} (${dirB}); two nodes of one model differ by more than many changes measured, and the spec of ${refusing.join(' and of ')} does not allow comparing across them (across_runs.allow_node_change)`,
        {
          hint: 'set across_runs: { allow_node_change: true } in the spec, or pass --allow-node-change to compare them anyway (the difference is listed), or measure both arms paired in one spec',
        },
      );
    }
    differences.push(
      `Slurm nodes: ${na} vs ${nb}${opts.allowNodeChange === true ? ' (compared by --allow-node-change)' : ' (compared: both specs allow a node change)'}`,
    );
  }
  for (const [what, key] of [
    ['card model', 'name'],
    ['driver', 'driver'],
  ] as const) {
    const [x, y] = [cardsOf(pa, key), cardsOf(pb, key)];
    if (x !== y) differences.push(`${what}: ${x} vs ${y}`);
  }
  if (A.summary.analysis.metric.name !== B.summary.analysis.metric.name)
    differences.push(`metric: ${A.summary.analysis.metric.name} vs ${B.summary.analysis.metric.name}`);
  const namesB = new Set(B.summary.analysis.arms.map((a) => a.arm));
  const shared = A.summary.analysis.arms.map((a) => a.arm).filter((n) => namesB.has(n));
  const arms: ArmComparison[] = shared.map((arm) => {
    const a = blockMeans(A.summary.analysis.values, arm);
    const b = blockMeans(B.summary.analysis.values, arm);
    const { welch, relative } = logRatio(a, b, alpha);
    const commits: [string | null, string | null] = [armCommit(A, arm), armCommit(B, arm)];
    if (commits[0] !== commits[1])
      differences.push(`arm ${arm}: commit ${commits[0] ?? '(the checkout)'} vs ${commits[1] ?? '(the checkout)'}`);
    return { arm, commits, blocks: [a.length, b.length], welch, relative };
  });
  const pairing =
    pairingRatio(A.summary.experiment, A.summary.analysis, alpha) ??
    pairingRatio(B.summary.experiment, B.summary.analysis, alpha);
  const first =
    arms.find((x) => x.commits[0] !== null && x.commits[1] !== null && x.commits[0] !== x.commits[1]) ?? arms[0];
  let paired_spec: string | null = null;
  if (first !== undefined) {
    const specA = specDoc(dirA);
    const toggles = A.summary.plan.arms.find((x) => x.name === first.arm)?.toggles ?? {};
    paired_spec = twoBuildSpec(
      specA,
      { name: 'a', ref: first.commits[0] ?? '<commit of run A>', toggles },
      { name: 'b', ref: first.commits[1] ?? '<commit of run B>', toggles },
    );
  }
  const level = `${Math.round((1 - alpha) * 100)} %`;
  const lines = [
    `# compare ${A.summary.experiment} (A) with ${B.summary.experiment} (B)`,
    '',
    `Comparable: the same workload (hash ${pa.workload_hash.slice(0, 12)}).${differences.length > 0 ? ' What differs:' : ' Nothing else differs in what was recorded.'}`,
    ...differences.map((d) => `- ${d}`),
    '',
    `Unpaired, blocks as the unit (Welch's t on the log of each arm's block means: B/A − 1, ${level} CI):`,
    ...arms.map(
      (x) =>
        `- ${x.arm}: ${signedPct(x.relative.estimate)} (CI ${signedPct(x.relative.ci?.[0])} to ${signedPct(x.relative.ci?.[1])}; ${x.blocks[0]} vs ${x.blocks[1]} blocks, df ${num(x.welch.df, 3)}, p ${num(x.welch.p, 3)})`,
    ),
    ...(arms.length === 0 ? ['- no arm ran in both'] : []),
    '',
    `How much weaker than paired: ${pairing?.message ?? 'neither run has a comparison of two arms to measure it on'}.`,
    '',
    ...(paired_spec === null
      ? []
      : [
          'The spec that measures it paired (both builds as arms of one experiment, in the same blocks):',
          '',
          '```yaml',
          paired_spec.trimEnd(),
          '```',
        ]),
    '',
  ];
  return { a: dirA, b: dirB, differences, arms, pairing, paired_spec, text: lines.join('\n') };
}
