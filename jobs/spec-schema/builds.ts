/**
 * Builds as arms: a spec may name builds of the workload — each a git ref of one repository —
 * and an arm may run on one of them. `builds:` maps a build name to its ref; `build:` at the
 * top level is the build every arm runs unless the arm names its own (so a leave-one-out over
 * the toggles of one branch's build is `build: branch`, and "branch vs main" is two A/B arms,
 * each naming a build). Toggles and builds combine: an arm sets both.
 *
 * A ref means nothing without its repository, so it is resolved to a commit when the spec is
 * loaded (orchestrator/spec/resolve-build-refs.ts); the commit, not the ref, enters the spec hash.
 */
import { z } from 'zod';
import { PathSchema } from './bounded.ts';
import { NameSchema, strictObject } from './strict-object.ts';

/** A git commit id, as `git rev-parse` prints it (sha1 or sha256 repositories). */
export const CommitSchema = z
  .string()
  .regex(/^([0-9a-f]{40}|[0-9a-f]{64})$/, { error: 'a full commit id (40 or 64 hex digits)' });

export const BuildRefSchema = strictObject({
  /** A branch, tag, or commit of the spec's repository (`git rev-parse --verify <ref>^{commit}`). */
  ref: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[^\s\0-]/, { error: 'a git ref (a branch, tag or commit); it may not start with "-" or a space' }),
  /** Filled in by orch when the spec is loaded; a spec file never writes it. */
  commit: CommitSchema.optional(),
  /** Filled in by orch: the repository's checkout had uncommitted changes when the ref resolved to its HEAD (they are not in the build). */
  dirty: z.boolean().optional(),
});
export type BuildRef = z.infer<typeof BuildRefSchema>;

export const BuildsSchema = z.record(NameSchema, BuildRefSchema);

/** `repo:` — the repository the refs name; relative to the spec file; default its git toplevel. */
export const RepoSchema = PathSchema;
