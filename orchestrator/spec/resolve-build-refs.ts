/**
 * Resolving a spec's `builds:` (jobs/spec-schema/builds.ts) against its repository, once, when the
 * spec is loaded (load-spec.ts): each ref becomes the commit `git rev-parse --verify <ref>^{commit}`
 * names in the repository (`repo:`, relative to the spec file, else the spec file's git
 * toplevel). A ref means nothing without its repository, and resolving at load makes
 * `orch validate` and `orch submit` refuse a ref that does not exist with the spec's file and
 * line, before anything is registered. It runs git, so it lives here, not in jobs/.
 */
import { execFileSync } from 'node:child_process';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { BuildRefProblem } from '../../jobs/build-refs.ts';
import { HARDENED_GIT_ARGS, hardenedGitEnv } from '../../jobs/hardened-git.ts';
import type { Spec } from '../../jobs/spec.ts';

function git(args: string[], cwd: string): { ok: true; out: string } | { ok: false; err: string } {
  try {
    return {
      ok: true,
      out: execFileSync('git', [...HARDENED_GIT_ARGS, ...args], {
        cwd,
        env: hardenedGitEnv(),
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }).trim(),
    };
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    return { ok: false, err: (e.stderr || e.message).trim().split('\n').slice(-2).join(' | ') };
  }
}

/**
 * Fills in `repo` (absolute toplevel) and each build's `commit` and `dirty`; returns the
 * problems (an unknown ref, no repository) instead of throwing, so they join the spec's other
 * issues. `dirty`: the checkout had uncommitted changes and the ref is its HEAD's commit — the
 * build is of the commit, so those changes are not measured.
 */
export function resolveBuildRefs(spec: Spec, specFile: string): BuildRefProblem[] {
  if (spec.builds === undefined || Object.keys(spec.builds).length === 0) return [];
  const problems: BuildRefProblem[] = [];
  const specDir = dirname(resolve(specFile));
  const start = spec.repo === undefined ? specDir : isAbsolute(spec.repo) ? spec.repo : resolve(specDir, spec.repo);
  const top = git(['rev-parse', '--show-toplevel'], start);
  if (!top.ok) {
    problems.push({
      path: spec.repo === undefined ? ['builds'] : ['repo'],
      message: `${start} is not inside a git repository, so the refs of builds cannot be resolved (${top.err})`,
      fix:
        spec.repo === undefined
          ? 'put the spec in the repository, or set repo: <path of a git checkout>'
          : 'give the path of a git checkout',
    });
    return problems;
  }
  spec.repo = top.out;
  const head = git(['rev-parse', '--verify', 'HEAD^{commit}'], top.out);
  const status = git(['status', '--porcelain', '--untracked-files=no'], top.out);
  const dirtyHead = head.ok && status.ok && status.out !== '' ? head.out : null;
  for (const [name, build] of Object.entries(spec.builds)) {
    if (build.commit !== undefined || build.dirty !== undefined) {
      problems.push({
        path: ['builds', name, build.commit !== undefined ? 'commit' : 'dirty'],
        message: 'orch fills this in from the ref when the spec is loaded',
        fix: 'remove it; name the commit as ref: <commit>',
      });
      continue;
    }
    const r = git(['rev-parse', '--verify', '--quiet', '--end-of-options', `${build.ref}^{commit}`], top.out);
    if (!r.ok || r.out === '') {
      problems.push({
        path: ['builds', name, 'ref'],
        message: `ref "${build.ref}" of build "${name}" does not name a commit in ${top.out}`,
        fix: 'name an existing branch, tag or commit (git branch -a; git log --oneline), or fetch it first',
      });
      continue;
    }
    build.commit = r.out;
    build.dirty = dirtyHead === r.out;
  }
  return problems;
}
