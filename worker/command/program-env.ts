/**
 * The environment of every program a worker starts for an experiment: a command workload's
 * ranks, a build command (the user's recipe, or graphrt's CMake build of a commit) and graphrt
 * processes. They run code the submitter chose, so they get a minimal environment rather than
 * the worker's own, which holds the cluster's credentials (REDIS_URL with its password, the
 * cluster secret or its file, a submit token):
 *
 * - the host's basics a program needs to run at all (BASE_VARIABLES), from the worker's
 *   environment;
 * - the variables the host's operator names in ORCH_RANK_ENV (a comma list; `NAME*` for every
 *   variable beginning with NAME), e.g. CC for a build or a variable a command reads;
 * - for graphrt, its own GRAPHRT_* and NCCL's NCCL_* configuration;
 * - what the caller sets: the variables the spec names (workload.run.env, env toggles), the
 *   card mapping (CUDA_VISIBLE_DEVICES), the ORCH_* of the rank and build protocols, graphrt's
 *   GRAPHRT_RENDEZVOUS_SECRET.
 *
 * A credential never passes, whoever names it: the worker's own and the spec's alike.
 */
import { UserInputError } from '../../jobs/errors.ts';

/** The operator's list of further variables passed to programs. */
export const RANK_ENV = 'ORCH_RANK_ENV';
/** graphrt's per-attempt secret (jobs/native-args.ts): a rank's own, never inherited. */
const RENDEZVOUS_SECRET = 'GRAPHRT_RENDEZVOUS_SECRET';

/** What a program needs of its host's environment to start and find its tools. */
const BASE_VARIABLES = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TMPDIR',
  'LD_LIBRARY_PATH',
  'CUDA_DEVICE_ORDER',
];

/** The credentials of a cluster: never in a program's environment. */
const CREDENTIALS =
  /^(REDIS_URL|ORCH_CLUSTER_SECRET(_FILE)?|ORCH_SUBMIT_TOKEN(_FILE)?|ORCH_DASHBOARD_TOKEN|ORCH_DB_URL)$/;

/** The patterns of ORCH_RANK_ENV, refusing a malformed entry (a typo would pass nothing, silently). */
function operatorPatterns(env: NodeJS.ProcessEnv): ((name: string) => boolean)[] {
  const raw = env[RANK_ENV];
  if (raw === undefined || raw.trim() === '') return [];
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((p) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*\*?$/.test(p)) {
        throw new UserInputError('CLI_USAGE', `${RANK_ENV}: "${p}" is not a variable name nor a NAME* prefix`, {
          hint: `set ${RANK_ENV} to a comma list such as CC,CXX,NCCL_*`,
        });
      }
      const prefix = p.endsWith('*') ? p.slice(0, -1) : null;
      return prefix === null ? (n: string) => n === p : (n: string) => n.startsWith(prefix);
    });
}

/** Whether `name` may never reach a program. */
export function isCredential(name: string): boolean {
  return CREDENTIALS.test(name);
}

/**
 * The environment of a program: the host's basics, the operator's names and the caller's
 * `inherit` patterns (graphrt's own GRAPHRT_*, NCCL's NCCL_*), then `set` on top; no credential,
 * and of GRAPHRT_RENDEZVOUS_SECRET only the one `set` gives.
 */
export function programEnv(
  set: Record<string, string>,
  env: NodeJS.ProcessEnv = process.env,
  inherit: readonly string[] = [],
): Record<string, string> {
  const patterns = [
    ...operatorPatterns(env),
    ...inherit.map((p) => (n: string) => (p.endsWith('*') ? n.startsWith(p.slice(0, -1)) : n === p)),
  ];
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || isCredential(name) || name === RENDEZVOUS_SECRET) continue;
    if (BASE_VARIABLES.includes(name) || patterns.some((m) => m(name))) out[name] = value;
  }
  for (const [name, value] of Object.entries(set)) if (!isCredential(name)) out[name] = value;
  return out;
}
