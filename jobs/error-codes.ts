/**
 * The error registry: every code an OrchError may carry, what kind of failure it is, and what
 * each kind means for a retry and for the CLI's exit code. A failure's fate is decided here and
 * nowhere else (docs/ARCHITECTURE.md "Errors"): the worker asks `retryable` before it hands an
 * error to BullMQ, the CLI asks `exitCodeFor` before it exits.
 *
 * Kinds:
 * - user-input: the user can fix it (spec, flag, environment, their own command). Never
 *   retried: the same input fails the same way. The CLI prints message and hint, exits 2.
 * - transient: the world changed under the attempt (a lease lost, a card busy, a worker stopped).
 *   The attempt is retried.
 * - deterministic: not the user's input, but the same payload would fail again (a rank's
 *   deterministic exit, a refused commit). Never retried; exit 1 without a stack.
 * - bug: orch contradicted itself (a payload its own scheduler built is invalid). Never retried;
 *   the CLI prints the stack and exits 1.
 *
 * graphrt's own error codes (INTERNAL, BAD_REQUEST, CUDA_ERROR…) are a separate set on the
 * protocol's error lines: jobs/graphrt-protocol.ts GRAPHRT_EXIT_CODES, native/PROTOCOL.md.
 */
export type ErrorKind = 'user-input' | 'transient' | 'deterministic' | 'bug';

export interface ErrorCodeInfo {
  kind: ErrorKind;
  /** one line: what happened */
  meaning: string;
  /** what to do, where the message alone does not say it */
  hint?: string;
}

export const ERROR_CODES = {
  // the command line and the environment
  CLI_USAGE: {
    kind: 'user-input',
    meaning: 'the command line does not parse (unknown command, bad option value)',
    hint: 'orch --help',
  },
  NO_REDIS_URL: { kind: 'user-input', meaning: 'a command that needs the cluster ran without REDIS_URL' },
  REDIS_URL_MISSING: { kind: 'user-input', meaning: 'orch worker started with neither --redis nor REDIS_URL' },
  REDIS_UNREACHABLE: {
    kind: 'user-input',
    meaning: "REDIS_URL (or the cluster file) names a Redis that does not answer within the command's timeout (10 s)",
  },
  HOST_CLAIMED: {
    kind: 'user-input',
    meaning: 'a worker started with a --host name another live worker already serves',
  },
  REDIS_AUTH: {
    kind: 'user-input',
    meaning: 'Redis refused the password of REDIS_URL (WRONGPASS), or needs one the URL lacks (NOAUTH)',
  },
  REDIS_EVICTION_POLICY: {
    kind: 'user-input',
    meaning: 'the Redis may evict keys; orch needs maxmemory-policy noeviction',
  },
  REDIS_NO_PASSWORD: {
    kind: 'user-input',
    meaning: 'the Redis accepts clients without a password and --insecure-redis was not given',
  },
  REDIS_URL_IN_ARGV: {
    kind: 'user-input',
    meaning: '--redis carries a password, which every local user could read from the process list',
  },
  REDIS_URL_FILE: {
    kind: 'user-input',
    meaning: '--redis-url-file is unreadable, readable by others, or holds no redis:// URL',
  },
  DASHBOARD_TOKEN: {
    kind: 'user-input',
    meaning:
      'orch dashboard: no token (beyond loopback, or on loopback without --open-loopback), or a token file/variable that is unsafe or too short',
  },
  DASHBOARD_HOST: {
    kind: 'user-input',
    meaning: 'orch dashboard --allow-host: a value that is not a bare host name or address',
  },
  DASHBOARD_PROCESS: {
    kind: 'user-input',
    meaning:
      'orch serve --http: the dashboard process exited before it listened (a port in use), or printed no address',
  },
  PRIVATE_DIR_UNSAFE: {
    kind: 'user-input',
    meaning: 'a state directory (card locks) or lock file is a symlink, owned by another user, or group/world-writable',
  },
  RUN_AS_UNREACHABLE: {
    kind: 'user-input',
    meaning:
      "orch worker --run-as: a directory the programs' user must enter (the build cache, the rank caches, a program's cwd, a build's checkout) lies under one it cannot search",
    hint: 'put the build directory (--build-dir) and workload.run.cwd under directories that user can enter, e.g. --build-dir /var/cache/orch/builds',
  },
  RANK_CACHES_FAILED: {
    kind: 'deterministic',
    meaning: "the run-as user's rank caches (Inductor, Triton, CUDA JIT) could not be made in its own directory",
  },
  EMBEDDED_REDIS_DIED: {
    kind: 'transient',
    meaning:
      "the private redis-server of an embedded run exited under it (killed from outside): the run's plan, leases and results are gone",
  },
  REDIS_SERVER_MISSING: { kind: 'user-input', meaning: 'the embedded default found no redis-server binary to start' },
  NO_WAIT_EMBEDDED: {
    kind: 'user-input',
    meaning: 'submit --no-wait without REDIS_URL: the embedded Redis would die with the command',
  },
  RANKS_OVER_CORES: {
    kind: 'user-input',
    meaning:
      'the embedded default on a machine without a visible GPU: more ranks per block than CPU cores, whose timings would measure the OS scheduler',
  },
  GRAPHRT_MISSING: { kind: 'user-input', meaning: 'the graphrt binary is not built', hint: 'npm run build' },
  HOST_NAME: { kind: 'user-input', meaning: '--host has characters a queue name cannot hold' },
  CARD_UNKNOWN: { kind: 'user-input', meaning: '--cards names a card this host does not have' },
  CARD_TWICE: { kind: 'user-input', meaning: '--cards lists a card twice' },
  CARD_NONE: { kind: 'user-input', meaning: '--cards is empty' },
  SLURM_ENV: {
    kind: 'user-input',
    meaning:
      "orch worker under Slurm: the job step's environment lacks what it needs (SLURM_JOB_ID, SLURMD_NODENAME) or lists GPUs that are not indexes",
  },
  SLURM_GPU_UNKNOWN: {
    kind: 'user-input',
    meaning: 'orch worker under Slurm: a GPU index Slurm gave the step is not one nvidia-smi lists',
  },
  SLURM_COMMAND: {
    kind: 'user-input',
    meaning: 'orch slurm: sbatch, squeue or scancel is missing or refused the request (its stderr is in the message)',
  },
  SLURM_NO_JOB: {
    kind: 'user-input',
    meaning: 'orch slurm status|down: no job of orch slurm up is recorded, or the recorded one is unknown to Slurm',
  },
  HOSTS_FAILED: { kind: 'user-input', meaning: 'orch hosts up|down failed on at least one host of the cluster file' },
  SSH_KEY_MISSING: { kind: 'user-input', meaning: "a cluster file's ssh key file cannot be read" },
  SSH_KEY_INVALID: { kind: 'user-input', meaning: "a cluster file's ssh key file is not a usable private key" },
  SSH_AUTH_FAILED: { kind: 'user-input', meaning: 'a host refused the ssh key' },
  SSH_UNREACHABLE: { kind: 'user-input', meaning: 'a host of the cluster file cannot be reached over ssh' },
  SSH_HOST_UNKNOWN: {
    kind: 'user-input',
    meaning: "a host's ssh key is in neither ~/.ssh/known_hosts nor the cluster file's host_key: it is not trusted",
  },
  SSH_HOST_KEY_CHANGED: {
    kind: 'user-input',
    meaning:
      'a host presented another key than the one known for it (possible man-in-the-middle): refused, never trusted automatically',
  },
  SSH_CONFIG_INVALID: {
    kind: 'user-input',
    meaning: '~/.ssh/config cannot be read or a ProxyJump in it cannot be followed',
  },
  CLUSTER_SECRET: {
    kind: 'user-input',
    meaning: 'the cluster secret that signs block jobs is missing, too short, or in a file others may read',
  },
  REDIS_OOM: {
    kind: 'user-input',
    meaning:
      'Redis is at maxmemory and refuses writes (OOM command not allowed): orch cannot record anything until memory is freed',
    hint: 'raise maxmemory, lower what the experiments print, or orch cancel the experiment that fills it',
  },
  REDIS_DATA_LOST: {
    kind: 'user-input',
    meaning: "the Redis restarted without its data: the experiment's plan, leases and results are gone",
    hint: 'give Redis persistence (appendonly yes) and submit again',
  },

  // the spec and what the cluster can do with it
  SPEC_INVALID: { kind: 'user-input', meaning: 'a spec, suite or cluster file failed validation (every issue listed)' },
  METRIC_SOURCE_INVALID: { kind: 'user-input', meaning: "a command workload's metric source is malformed" },
  TOO_MANY_RANKS: { kind: 'user-input', meaning: 'the spec needs more cards on one host than any host has' },
  NO_MATCHING_CARDS: { kind: 'user-input', meaning: 'submit --no-wait: no registered card can run the spec now' },
  NO_SUCH_EXPERIMENT: {
    kind: 'user-input',
    meaning: 'no experiment with that id under this Redis and prefix',
    hint: 'orch status lists the experiments',
  },
  NO_SUCH_SUITE: {
    kind: 'user-input',
    meaning: 'no nightly suite of that name is installed',
    hint: 'orch nightly list',
  },
  NIGHTLY_SPECS_REJECTED: {
    kind: 'user-input',
    meaning: 'a nightly suite run could not submit some of its specs (the others were submitted)',
  },
  HISTORY_UNREACHABLE: {
    kind: 'user-input',
    meaning: 'the nightly history database (ORCH_DB_URL, or the SQLite file) cannot be opened',
    hint: 'start the database or fix ORCH_DB_URL / ORCH_HISTORY_DB',
  },
  HISTORY_SCHEMA_NEWER: {
    kind: 'user-input',
    meaning: 'the nightly history database was migrated by a newer orch than this one',
  },
  HISTORY_UNUSABLE: {
    kind: 'user-input',
    meaning:
      'a nightly run could not use the history database as it is (a file that is not SQLite or is corrupt, read-only, a login refused): retrying cannot help; the night alerted and failed',
  },
  HISTORY_UNAVAILABLE: {
    kind: 'transient',
    meaning:
      "the nightly history database did not answer, or stayed locked, through every retry of a night's read or write; the night alerted and failed",
  },
  ANALYSIS_INPUT: {
    kind: 'user-input',
    meaning: 'the results cannot be analyzed (an arm without reps, a missing control)',
  },

  // the user's command workload: build, preflight, run
  BUILD_DIR_MISSING: {
    kind: 'user-input',
    meaning:
      "build.dir names no directory on the worker's host (orch validate checks an absolute or relative one where it runs)",
  },
  BUILD_NOT_GIT: { kind: 'user-input', meaning: 'build.key.git: the build dir is not a git checkout with a commit' },
  BUILD_GIT_FAILED: { kind: 'user-input', meaning: 'build.key.dirty_diff: git diff failed in the build dir' },
  BUILD_TOOLCHAIN_FAILED: { kind: 'user-input', meaning: 'a build.key.toolchain command exited non-zero' },
  BUILD_FAILED: { kind: 'user-input', meaning: "the spec's build command failed" },
  BUILD_ARTIFACT_OUTSIDE: {
    kind: 'user-input',
    meaning: 'build.artifacts names a path outside the build directory (absolute, or through ..)',
  },
  BUILD_ARTIFACT_MISSING: { kind: 'user-input', meaning: 'the build exited 0 without producing a listed artifact' },
  RESULTS_PATH_UNSAFE: {
    kind: 'user-input',
    meaning:
      'results/<id> or a file orch writes in it is a symbolic link, not a directory or file, or owned by another user: the results writer follows no link and writes nothing there',
    hint: "remove the path named (it is not orch's), or write the results under another --results root",
  },
  RESULTS_DIR_INVALID: {
    kind: 'user-input',
    meaning: 'orch report --from or orch compare was given a directory that is not an orch results directory',
  },
  EVENTS_FILE_INVALID: {
    kind: 'user-input',
    meaning:
      "a results directory's events.jsonl holds a line that is not an event record (jobs/stream-event.ts): the message names the file, the line and the schema path",
  },
  PRIOR_RUN_NO_NOISE: {
    kind: 'user-input',
    meaning:
      'orch plan --power was given a prior run whose values hold no paired noise to plan from (no comparison with two pairs in a block)',
  },
  COMPARE_NOT_COMPARABLE: {
    kind: 'user-input',
    meaning:
      'orch compare: the two results measured different workloads (their workload hashes differ), or ran on different Slurm nodes that a spec of theirs does not allow (across_runs.allow_node_change) and --allow-node-change was not given',
  },
  BUILD_COMMIT_MISSING: {
    kind: 'user-input',
    meaning: "a build's commit cannot be checked out into a worktree of the spec's repository on the worker's host",
  },
  GRAPHRT_BUILD_PROTOCOL: {
    kind: 'user-input',
    meaning:
      "the graphrt built from a build's commit speaks a line protocol this worker cannot read (its hello's version, fields or features differ)",
  },
  GRAPHRT_CUDA_CHOICE: {
    kind: 'user-input',
    meaning:
      "GRAPHRT_CUDA in the worker's environment is not ON, OFF or AUTO, so graphrt of a commit cannot be built like the worker's own",
  },
  BUILD_LOCK_FAILED: {
    kind: 'transient',
    meaning: 'the host build lock (flock) could not be taken',
    hint: 'flock(1) is in util-linux',
  },
  BUILD_ATTEMPTS_EXHAUSTED: {
    kind: 'transient',
    meaning:
      'every host that could run an experiment failed to build it, transiently, as often as the scheduler tries (maxAttempts): the experiment ends before any card was leased to it',
  },
  BUILD_JOB_INVALID: { kind: 'bug', meaning: 'a build job payload does not match jobs/build-job.ts' },
  PREFLIGHT_DISK: { kind: 'user-input', meaning: 'the build dir has less free disk than min_free_disk_gb' },
  PREFLIGHT_ARTIFACT_MISSING: { kind: 'user-input', meaning: 'an artifact of the build cache entry is gone' },
  PREFLIGHT_CPU_BUILD: {
    kind: 'user-input',
    meaning: 'the spec needs cuda but graphrt was built without the CUDA backend',
  },
  PREFLIGHT_NO_GPU: { kind: 'user-input', meaning: 'the spec needs cuda but graphrt sees no usable GPU on this host' },
  PREFLIGHT_HELLO: { kind: 'deterministic', meaning: 'graphrt hello exited without a hello line (a broken binary)' },
  TOGGLE_UNMAPPED: {
    kind: 'user-input',
    meaning: 'an arm sets a toggle that workload.toggles does not map to a flag or env',
  },
  RANK_INJECTION_TAKEN: {
    kind: 'user-input',
    meaning:
      "a resident rank on a cuda card would get a CUDA_INJECTION64_PATH of another profiler, which orch's launch counts need and never replace",
  },
  CAPTURE_FAILED: {
    kind: 'user-input',
    meaning:
      "a graph arm's capture failed in the user's program (a host copy or sync inside the captured step): the arm is not measured, every other arm is (jobs/capture-blocker.ts)",
    hint: "move the host work out of the captured step (build inputs on the device, in place), see the report's Capture blockers",
  },
  RANK_NEVER_SERVED: {
    kind: 'user-input',
    meaning:
      "a resident program exited cleanly (code 0) before its hello: it never called the rank library's serve(), so a retry would end the same way",
    hint: 'call orch_rank.serve(...) (Python) or orch_rank::serve(...) (C++) at the end of the program',
  },
  RANK_TOGGLE_UNKNOWN: {
    kind: 'user-input',
    meaning:
      "an arm sets a toggle that the resident program's hello does not list among the toggles it understands (ranklib/PROTOCOL.md)",
  },
  COMMAND_FAILED: { kind: 'user-input', meaning: "the user's command exited non-zero or was killed by a signal" },
  COMMAND_CWD_MISSING: {
    kind: 'user-input',
    meaning: 'workload.run.cwd names a directory that does not exist on the worker',
  },
  COMMAND_TIMEOUT: { kind: 'user-input', meaning: "the user's command ran past workload.run.timeout_s" },
  COMMAND_ABORTED: {
    kind: 'transient',
    meaning: "the user's command was killed because its gang failed or its request timed out",
  },
  METRIC_NO_LINES: { kind: 'user-input', meaning: "the user's command printed no metric line" },
  METRIC_NOT_A_NUMBER: { kind: 'user-input', meaning: 'a metric line held a value that is not a number' },
  METRIC_BAD_STEP: { kind: 'user-input', meaning: 'a metric line held a step that is not a non-negative integer' },
  METRIC_TOO_FEW_STEPS: {
    kind: 'user-input',
    meaning: "the user's command printed fewer measured steps than workload.steps",
  },
  METRIC_REGEX_TOO_SLOW: {
    kind: 'user-input',
    meaning:
      'the metric regex took longer than its per-line time budget on one output line (catastrophic backtracking)',
  },
  RANK_LINE_TOO_LONG: {
    kind: 'user-input',
    meaning: "the user's command printed a stdout line longer than MAX_RANK_LINE_BYTES (jobs/line-limit.ts)",
  },

  // a block attempt on its gang
  CARD_BUSY: { kind: 'transient', meaning: "another process holds the card's flock" },
  BUILDS_ACROSS_HOSTS: {
    kind: 'user-input',
    meaning:
      "a gang across hosts whose arms run graphrt of several builds (each build's ranks would need a rendezvous of their own across hosts)",
    hint: 'blocks.placement: host',
  },
  HELPER_MISSING: {
    kind: 'user-input',
    meaning: "a host program orch runs around a user's program (flock, setpriv) is not on the worker's PATH",
    hint: "install util-linux on the worker's host",
  },
  CARD_LOCK_HANDOFF: {
    kind: 'user-input',
    meaning:
      "the worker could not lock the card for a rank of several graphrt builds (flock(1) on the card's lock file failed)",
    hint: "flock(1) is in util-linux; the worker's lock dir must be writable",
  },
  FOREIGN_PROCESS: {
    kind: 'transient',
    meaning:
      'a process orch did not start runs on a leased card (foreign_process: fail; or wait, in a gang across hosts, whose reps run again as a whole)',
  },
  WORKER_STOPPING: { kind: 'transient', meaning: 'the worker was stopped (SIGTERM) while the block waited' },
  LEASE_LOST: {
    kind: 'transient',
    meaning: "the gang's lease expired, was released or revoked; its results are refused",
  },
  GANG_NO_PORT: {
    kind: 'transient',
    meaning:
      "rank 0's worker found no free TCP port for a command gang's rendezvous (MASTER_PORT) after its bind-probes",
  },
  GANG_PORT_TAKEN: {
    kind: 'transient',
    meaning:
      "rank 0 of a command gang could not bind its MASTER_PORT, taken by another process after the worker's check, and again on the second port the worker started the gang on (worker/command/stolen-port.ts)",
  },
  RANK_EXCHANGE: {
    kind: 'transient',
    meaning:
      'a rank\'s exchange (ranklib/PROTOCOL.md "Exchange") got no bytes from rank 0 within the block\'s hello deadline, or rank 0 published a key twice with other bytes',
  },
  GANG_PART_TIMEOUT: {
    kind: 'transient',
    meaning:
      "a part of a gang across hosts waited too long for another host's part (its rendezvous, its staged results, the commit)",
  },
  RANK_DIED: {
    kind: 'transient',
    meaning: 'a rank was killed by a signal or exited with a code a retry may not see again',
  },
  RANK_TIMEOUT: {
    kind: 'transient',
    meaning:
      "a rank did not answer a request within the worker's request timeout (or a request written behind one that did not): nothing says a retry would hang again, as graphrt's own RANK_LOST exit is retried",
  },
  RANK_REQUEST_INVALID: {
    kind: 'bug',
    meaning:
      'the executor asked a rank for what its handle cannot serve (a third request in flight, an arm of a build the rank did not start, a workload of another runtime)',
  },
  RANK_EXITED: {
    kind: 'deterministic',
    meaning:
      'a rank exited with a code native/PROTOCOL.md calls deterministic (bug, bad input, no backend, gate, CUDA fault)',
  },
  RANK_ANSWERED_ERROR: { kind: 'deterministic', meaning: 'a rank answered a rep or gate with an error line' },
  BLOCK_ALREADY_COMMITTED: {
    kind: 'deterministic',
    meaning: "another attempt already committed this block; this attempt's results are refused",
  },
  RANK_NEVER_JOINED: {
    kind: 'deterministic',
    meaning:
      "a command gang's rank never joined the rendezvous on MASTER_PORT by the hello deadline while the others waited in it (worker/command/rendezvous-joins.ts): the same program would keep them waiting again",
  },
  RANK_PROTOCOL: {
    kind: 'deterministic',
    meaning:
      'a rank broke the protocol: a line failing its schema, longer than MAX_RANK_LINE_BYTES, answering another request, a hello of another protocol version, or no hello in time',
  },
  STORED_RECORD_INVALID: {
    kind: 'deterministic',
    meaning:
      'a record at rest (a Redis field, a file orch wrote, a reply of one of its Lua scripts) is not JSON or does not match its schema: the message names the key or file and the schema path',
    hint: 'the record was written by hand or by another orch version: delete the key (or file) or rewrite it as the schema says',
  },
  RESULT_MALFORMED: {
    kind: 'deterministic',
    meaning: 'a committed result in Redis does not match its schema (jobs/rep-result.ts, jobs/gate-result.ts)',
  },
  GRAPHRT_PROTOCOL: {
    kind: 'deterministic',
    meaning: 'graphrt wrote a line that is not a protocol line (a version skew)',
    hint: 'npm run build',
  },
  BLOCK_PAYLOAD_INVALID: { kind: 'bug', meaning: 'a block job payload does not match jobs/block-job.ts' },
  BLOCK_WRONG_HOST: { kind: 'bug', meaning: 'a block job reached the worker of another host' },
  BLOCK_FOREIGN_CARDS: { kind: 'bug', meaning: 'a block job names cards its host does not have' },
  GRANT_MISSING: {
    kind: 'deterministic',
    meaning: 'a block job carries no grant signed by the scheduler; the worker ran nothing',
    hint: 'something other than the scheduler wrote to the host queue',
  },
  GRANT_INVALID: {
    kind: 'deterministic',
    meaning: "a block job's grant does not verify with this worker's cluster secret; the worker ran nothing",
    hint: 'give the scheduler and every worker the same cluster secret',
  },
  GRANT_REPLAYED: {
    kind: 'deterministic',
    meaning:
      "a signed job's nonce was already consumed: a copy of a job that ran (or was taken) once; the worker ran nothing",
    hint: 'something other than the scheduler re-added a job it had seen',
  },
  NIGHTLY_JOB_REFUSED: {
    kind: 'deterministic',
    meaning:
      "a job on queue nightly is not one its suite's signed scheduler made (no or a bad signature, another schedule, name, id or time); orch serve ran nothing",
    hint: 'install the suite with orch nightly install, with the cluster secret orch serve has',
  },
  COMMAND_NOT_ALLOWED: {
    kind: 'user-input',
    meaning: 'a command workload reached a worker started without --allow-command; nothing ran',
    hint: "start the worker with --allow-command to run users' commands on it",
  },
  BUILD_NOT_ALLOWED: {
    kind: 'user-input',
    meaning:
      'a build of a commit (builds:) reached a worker started without --allow-build or --allow-command; nothing ran',
    hint: 'start the worker with --allow-build (or --allow-command) to build commits on it',
  },
  WORK_NOT_ALLOWED: {
    kind: 'user-input',
    meaning: 'orch submit: no registered worker allows what the spec runs (a command workload, a build of a commit)',
    hint: 'start a worker with --allow-command (commands) or --allow-build (builds of commits), or change the spec',
  },
  SUBMIT_TOKEN: {
    kind: 'user-input',
    meaning: 'the submit token is missing, too short, or in a file others may read',
    hint: 'give orch submit and orch serve the same token: ORCH_SUBMIT_TOKEN_FILE (mode 0600) or ORCH_SUBMIT_TOKEN',
  },
  SUBMIT_UNAUTHORIZED: {
    kind: 'user-input',
    meaning:
      'the scheduler refused an experiment whose submit signature does not verify with its submit token; nothing was planned or granted',
    hint: 'submit with orch submit and the submit token orch serve holds (ORCH_SUBMIT_TOKEN_FILE)',
  },
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes a UserInputError may carry: exactly those of kind user-input. */
export type UserInputCode = {
  [C in ErrorCode]: (typeof ERROR_CODES)[C]['kind'] extends 'user-input' ? C : never;
}[ErrorCode];

/** What each kind means for a BullMQ attempt and for the CLI. */
export const KIND_POLICY: Record<ErrorKind, { retry: boolean; exitCode: 1 | 2; stack: boolean }> = {
  'user-input': { retry: false, exitCode: 2, stack: false },
  transient: { retry: true, exitCode: 1, stack: false },
  deterministic: { retry: false, exitCode: 1, stack: false },
  bug: { retry: false, exitCode: 1, stack: true },
};

export function isErrorCode(s: unknown): s is ErrorCode {
  return typeof s === 'string' && Object.hasOwn(ERROR_CODES, s);
}

/** The registered code of an error, if it carries one (an OrchError, or one that crossed a file). */
export function codeOf(err: unknown): ErrorCode | null {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return isErrorCode(code) ? code : null;
}

/**
 * The kind of any thrown value. An error without a registered code is `unclassified`: in a
 * worker it is mostly I/O (a dropped connection, a timeout) and is retried; at the CLI nothing
 * explains it, so it prints as a bug.
 */
export function kindOf(err: unknown): ErrorKind | 'unclassified' {
  const code = codeOf(err);
  return code === null ? 'unclassified' : ERROR_CODES[code].kind;
}

/** Whether a failed attempt is tried again: the one retry decision of orch. */
export function retryable(err: unknown): boolean {
  // BullMQ's own marker, for an error already translated by a runner below the executor
  if (err instanceof Error && err.name === 'UnrecoverableError') return false;
  const kind = kindOf(err);
  return kind === 'unclassified' ? true : KIND_POLICY[kind].retry;
}

/** The CLI's exit code for an error that ends a command. */
export function exitCodeFor(err: unknown): 1 | 2 {
  const kind = kindOf(err);
  return kind === 'unclassified' ? 1 : KIND_POLICY[kind].exitCode;
}

/** Whether the CLI prints the stack and cause chain (a bug, or nothing explains it). */
export function printsStack(err: unknown): boolean {
  const kind = kindOf(err);
  return kind === 'unclassified' || KIND_POLICY[kind].stack;
}
