/**
 * A two-arm spec that measures two commits paired, in the same blocks (builds as arms,
 * jobs/spec-schema/builds.ts): the workload and settings of an existing spec, with `builds` and `arms`
 * replaced. `orch compare` prints it (the paired measurement of what it compared unpaired); the
 * nightly's `against: last_good` submits it.
 */
import { stringify } from 'yaml';

export interface TwoBuildArm {
  /** The arm's (and its build's) name. */
  name: string;
  /** A commit (or any ref) of the repository. */
  ref: string;
  toggles?: Record<string, boolean | string>;
}

/** `base`: the spec as parsed from YAML (a plain object); design, arms and builds are replaced. */
export function twoBuildSpec(base: Record<string, unknown>, a: TwoBuildArm, b: TwoBuildArm, name?: string): string {
  const { arms: _arms, builds: _builds, build: _build, sweep: _sweep, ...rest } = base;
  const arm = (x: TwoBuildArm) => ({
    name: x.name,
    build: x.name,
    ...(x.toggles && Object.keys(x.toggles).length > 0 ? { toggles: x.toggles } : {}),
  });
  // A base-reference gate names a build of the old spec; the two-build spec has only its own two.
  const { base_reference: _ref, ...gates } = (rest.gates ?? {}) as Record<string, unknown>;
  const spec = {
    ...rest,
    ...(rest.gates === undefined ? {} : { gates }),
    name: name ?? `${String(base.name ?? 'experiment')}-paired`,
    design: 'ab',
    builds: { [a.name]: { ref: a.ref }, [b.name]: { ref: b.ref } },
    arms: [arm(a), arm(b)],
  };
  return stringify(spec);
}
