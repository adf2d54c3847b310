/**
 * A paired nightly entry (`against: last_good`, jobs/suite.ts): tonight's commit and the last
 * commit whose nightly passed become the two builds of one A/B experiment, interleaved on the
 * same cards, so a regression shows in one night's paired CI instead of in a drift of absolute
 * numbers across nights. The spec names the builds by its two arms: the first arm's build
 * (the reference) gets the last good commit, the second's tonight's. Both refs are resolved
 * here, when the night submits, and the commits enter the spec hash as for any build.
 */

import { parseDocument, Scalar } from 'yaml';
import type { NightlyRow } from '../../history/history-store.ts';
import { hashableSpec } from '../../jobs/build-refs.ts';
import { SpecError } from '../../jobs/errors.ts';
import type { Spec } from '../../jobs/spec.ts';
import { specHash } from '../../jobs/spec-hash.ts';
import type { LoadedSpec } from '../spec/load-spec.ts';
import { resolveBuildRefs } from '../spec/resolve-build-refs.ts';

/** The keys a paired row's `commits` carries. */
export const TONIGHT = 'tonight';
export const LAST_GOOD = 'last_good';

/** Why this spec cannot be a paired entry, or null. */
export function pairingProblem(spec: Spec): string | null {
  const builds = (spec.arms ?? []).map((a) => a.build ?? spec.build);
  if (spec.design !== 'ab' || builds.length !== 2 || builds.some((b) => b === undefined) || builds[0] === builds[1]) {
    return "a paired entry (against: last_good) needs design: ab with two arms each naming its own build (builds: { last_good: { ref: main }, tonight: { ref: HEAD } }): the first arm runs the last good commit, the second tonight's";
  }
  return null;
}

/**
 * The commit of the newest night whose rows of this spec all passed: the experiment done, every
 * gate passing, nothing slower and no regression found. Null before any such night.
 */
export function lastGoodCommit(rows: NightlyRow[], specFile: string): { commit: string; scheduledAt: number } | null {
  const byRun = new Map<string, NightlyRow[]>();
  for (const r of rows) if (r.spec_file === specFile) byRun.set(r.run_id, [...(byRun.get(r.run_id) ?? []), r]);
  const good = [...byRun.values()]
    .filter((rs) =>
      rs.every(
        (r) =>
          r.experiment_state === 'done' &&
          r.gates_pass === true &&
          r.verdict !== 'slower' &&
          r.finding !== 'regression' &&
          r.commits[TONIGHT],
      ),
    )
    .sort((a, b) => b[0]!.scheduled_at - a[0]!.scheduled_at);
  const newest = good[0]?.[0];
  return newest ? { commit: newest.commits[TONIGHT]!, scheduledAt: newest.scheduled_at } : null;
}

export interface PairedSpec {
  loaded: LoadedSpec;
  commits: Record<string, string>;
  /** what the night's rows say about the pairing */
  pairing: string;
}

/**
 * The loaded spec with its two arms' builds set to the last good commit and tonight's (`ref`,
 * default HEAD of the spec's repository), resolved and hashed again. Without a last good night
 * both are tonight's commit: an A/A, said so in `pairing`.
 */
export function pairSpec(
  loaded: LoadedSpec,
  lastGood: { commit: string; scheduledAt: number } | null,
  ref: string | null,
): PairedSpec {
  const problem = pairingProblem(loaded.spec);
  if (problem) throw new SpecError([{ file: loaded.file, line: 1, path: 'arms', message: problem }]);
  const spec = structuredClone(loaded.spec);
  const [reference, candidate] = spec.arms!.map((a) => (a.build ?? spec.build)!) as [string, string];
  const tonightRef = ref ?? 'HEAD';
  // Every build is resolved afresh (resolveBuildRefs refuses one that already has its commit).
  spec.builds = Object.fromEntries(Object.entries(spec.builds ?? {}).map(([n, b]) => [n, { ref: b.ref }]));
  spec.builds[candidate] = { ref: tonightRef };
  spec.builds[reference] = { ref: lastGood?.commit ?? tonightRef };
  const problems = resolveBuildRefs(spec, loaded.file);
  if (problems.length > 0) {
    throw new SpecError(
      problems.map((p) => ({
        file: loaded.file,
        line: 1,
        path: p.path.join('.'),
        message: p.message,
        ...(p.fix ? { fix: p.fix } : {}),
      })),
    );
  }
  const tonight = spec.builds[candidate]!.commit!;
  // One rev-parse for tonight: a HEAD that moved between the two resolutions would pair two commits.
  if (!lastGood) spec.builds[reference] = { ...spec.builds[candidate]! };
  const last = spec.builds[reference]!.commit!;
  const pairing = lastGood
    ? `paired: ${candidate} ${tonight.slice(0, 12)} (${tonightRef}) against ${reference} ${last.slice(0, 12)}, the last good night's commit (${new Date(lastGood.scheduledAt).toISOString()})`
    : `unpaired: no night of this spec has passed yet, so tonight's commit ${tonight.slice(0, 12)} (${tonightRef}) runs against itself (an A/A)`;
  return {
    loaded: {
      file: loaded.file,
      text: pairedText(loaded.text, { [reference]: last, [candidate]: tonight }),
      spec,
      hash: specHash(hashableSpec(spec)),
    },
    commits: { [LAST_GOOD]: last, [TONIGHT]: tonight },
    pairing,
  };
}

/**
 * The spec's text with each named build's `ref` set to its resolved commit, the rest as written
 * (comments too): the text registered for a paired night then names the commits its hash covers,
 * and loading it again resolves to the same spec and the same hash.
 */
export function pairedText(text: string, commits: Record<string, string>): string {
  const doc = parseDocument(text);
  for (const [name, commit] of Object.entries(commits)) {
    // quoted: an all-digit commit (with an `e`, say) must not read back as a number
    const ref = new Scalar(commit);
    ref.type = Scalar.QUOTE_DOUBLE;
    doc.setIn(['builds', name, 'ref'], ref);
  }
  return doc.toString();
}

/** The commits of a paired experiment already submitted (a retried night reads them from its spec). */
export function pairedCommits(spec: Spec): Record<string, string> {
  const [reference, candidate] = (spec.arms ?? []).map((a) => a.build ?? spec.build);
  const c = (n: string | undefined) => (n === undefined ? undefined : spec.builds?.[n]?.commit);
  const last = c(reference);
  const tonight = c(candidate);
  return last && tonight ? { [LAST_GOOD]: last, [TONIGHT]: tonight } : {};
}
