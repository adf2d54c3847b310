/**
 * A spec's `builds:` (jobs/spec-schema/builds.ts) once its refs are resolved to commits
 * (orchestrator/spec/resolve-build-refs.ts, at load): what the spec hash covers of them and what a
 * block job carries. Pure: the git that resolves them runs outside jobs/.
 *
 * The spec hash covers each build's commit, not its ref nor the repository's path
 * (`hashableSpec`): `main` today and `main` tomorrow are different experiments, and two clones
 * of one repository measure the same one.
 */
import type { Spec } from './spec.ts';
import type { PathSegment } from './yaml-source.ts';

export interface BuildRefProblem {
  path: PathSegment[];
  message: string;
  fix?: string;
}

/** The spec as hashed: each build by its commit alone; the repository's path left out. */
export function hashableSpec(spec: Spec): unknown {
  if (spec.builds === undefined) return spec;
  const { repo: _repo, ...rest } = spec;
  return {
    ...rest,
    builds: Object.fromEntries(Object.entries(spec.builds).map(([n, b]) => [n, { commit: b.commit }])),
  };
}

/** What a block job carries of the builds: the repository and each build's commit (jobs/block-job.ts). */
export function blockBuilds(
  spec: Spec,
): { repo: string; builds: Record<string, { commit: string; ref: string }> } | null {
  if (spec.builds === undefined || spec.repo === undefined) return null;
  return {
    repo: spec.repo,
    builds: Object.fromEntries(
      Object.entries(spec.builds).map(([n, b]) => [n, { commit: b.commit ?? b.ref, ref: b.ref }]),
    ),
  };
}
