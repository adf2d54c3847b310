/**
 * How orch runs git on a repository it did not choose (a spec's `repo:`, a build's worktree, a
 * checkout's build key): as a reader of its objects, never as a runner of its code. Every git
 * call of a build and of resolving `builds:` goes through these:
 *
 * - `-c core.hooksPath=/dev/null`: no hook runs (`git worktree add` would run post-checkout);
 * - `-c core.fsmonitor=false`: no fsmonitor command runs on status or diff;
 * - GIT_CONFIG_GLOBAL=/dev/null, GIT_CONFIG_NOSYSTEM=1: the home and system gitconfig are not
 *   read, so a `safe.directory=*` there does not open another user's repository (git refuses
 *   it as of dubious ownership) and no alias, filter or hook path of theirs applies;
 * - the caller's GIT_* variables dropped: GIT_DIR, GIT_CONFIG_PARAMETERS and the like would
 *   point git elsewhere or inject configuration.
 *
 * Pure: the arguments and the environment, for whoever spawns git.
 */

/** Put before git's subcommand. */
export const HARDENED_GIT_ARGS: readonly string[] = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false'];

/** The environment of a hardened git call: `env` without GIT_*, the global and system config off. */
export function hardenedGitEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (!k.startsWith('GIT_') && v !== undefined) out[k] = v;
  return { ...out, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0' };
}
