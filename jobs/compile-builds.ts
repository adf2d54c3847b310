/**
 * The compile checks of builds as arms (jobs/spec-schema/builds.ts): every build an arm, the spec or
 * the base-reference gate names exists; a command workload's build needs its build recipe to
 * build each commit with (a native spec's builds are graphrt of each commit, built by graphrt's
 * own CMake); and the reference arm's name is free.
 */
import { suggestion } from './did-you-mean.ts';
import type { Spec } from './spec.ts';
import type { PathSegment } from './yaml-source.ts';

type Report = (path: PathSegment[], message: string, fix?: string) => void;

/** The name of the arm that runs the base arm from the base-reference build. */
export const referenceArmName = (base: string): string => `${base}_ref`;

export function checkBuilds(spec: Spec, problem: Report): void {
  const names = Object.keys(spec.builds ?? {});
  const named: { path: PathSegment[]; build: string }[] = [];
  if (spec.build !== undefined) named.push({ path: ['build'], build: spec.build });
  for (const [i, a] of (spec.arms ?? []).entries()) {
    if (a.build !== undefined) named.push({ path: ['arms', i, 'build'], build: a.build });
  }
  const ref = spec.gates.base_reference;
  if (ref !== undefined) named.push({ path: ['gates', 'base_reference', 'build'], build: ref.build });
  for (const n of named) {
    if (!names.includes(n.build)) {
      problem(
        n.path,
        `no build named "${n.build}"`,
        names.length > 0 ? suggestion(n.build, names) : 'define it under builds: { <name>: { ref: <git ref> } }',
      );
    }
  }
  if (names.length === 0) return;
  const w = spec.workload;
  // A native spec's builds are commits of orch: graphrt's own CMake build is their recipe
  // (worker/builds/graphrt-build.ts). A command workload builds each commit with its own recipe.
  if (w.runtime === 'command' && w.build === undefined) {
    problem(
      ['builds'],
      'builds name refs, but the workload has no build recipe to build each commit with',
      'add workload.build: { cmd, artifacts } (run in a worktree of each commit)',
    );
  }
  if (ref !== undefined) {
    const base = spec.design === 'leave-one-out' ? 'base' : (spec.arms?.[0]?.name ?? '');
    if (spec.arms?.some((a) => a.name === referenceArmName(base))) {
      problem(
        ['arms'],
        `arm name "${referenceArmName(base)}" is taken by the base-reference arm of "${base}"`,
        'rename the arm',
      );
    }
  }
}

/** The build an A/B arm runs: its own, else the spec's. */
export function armBuild(spec: Spec, arm: { build?: string | undefined }): string | undefined {
  return arm.build ?? spec.build;
}
