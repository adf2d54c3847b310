/**
 * Every Redis key and BullMQ queue name orch uses, in one place (jobs/CONTRACTS.md "Redis keys").
 * Nothing outside store/ builds a key: the stores and the Lua scripts (store/lua/) take them
 * from here.
 *
 * BullMQ's own keys live under `<prefix>:<queue>:*`; orch's keys under `<prefix>:*`. The prefix
 * is `orch` in production; tests pass a fresh prefix so parallel tests never share state.
 * Queue names never contain ':' (BullMQ throws), and neither do job ids.
 *
 * If Redis Cluster is ever needed, wrap the prefix in a hash tag (`{orch}`): the gang-lease and
 * commit scripts touch keys of several cards, hosts and experiments in one call.
 */
export const DEFAULT_PREFIX = 'orch';

/** BullMQ queue names (used together with `prefix`). */
export const QUEUES = {
  /** nightly suite runs (one BullMQ job scheduler per suite; orch serve consumes) */
  nightly: 'nightly',
} as const;

/** The dispatch queue that one host's worker consumes. */
export function hostQueue(host: string): string {
  return `host-${host}`;
}

/**
 * The build queue of one host (orchestrator/scheduler/build-phase.ts): the builds of an
 * experiment, made before any card of the host is leased to it. A queue of its own, so a build
 * never takes a slot a granted block waits for.
 */
export function hostBuildQueue(host: string): string {
  return `build-${host}`;
}

/** `<experiment>.build-a<attempt>-<host>`: one build job per host and attempt, deterministic like hostJobId. */
export function buildJobId(experiment: string, attempt: number, host: string): string {
  return `${experiment}.build-a${attempt}-${host}`;
}

/** `<experiment>.b<block>-a<attempt>-<host>`: deterministic, so a new leader re-attaches. */
export function hostJobId(experiment: string, block: number, attempt: number, host: string): string {
  return `${experiment}.b${block}-a${attempt}-${host}`;
}

export interface OrchKeys {
  prefix: string;
  /** hash card id → JSON Card */
  cards: string;
  /** hash of one host: pid, started, cards (JSON list), version */
  host(name: string): string;
  /** string with a TTL; present while the host's worker heartbeats */
  hostAlive(name: string): string;
  /** hash { token, pid, machine, started } with a TTL: the one worker serving the host name (store/host-claim.ts) */
  hostClaim(name: string): string;
  /** hash { owner, epoch, block, experiment, expires } with a PX TTL; written only by Lua */
  lease(card: string): string;
  /** counter; INCR once per granted gang: the fencing token */
  leaseEpoch: string;
  /** string: a random id written by the first orch process on this Redis (store/redis-instance.ts); gone means the data was lost */
  instance: string;
  /** pub/sub channel: JSON { cards, epoch, reason } published by revoke-gang.lua */
  leaseRevoked: string;
  /** hash (spec, hash, state, created) */
  exp(id: string): string;
  /** stream: block attempt epoch host card rank event */
  events(id: string): string;
  /** hash lines bytes dropped_lines dropped_bytes noted: the experiment's output budget (store/event-budget.ts) */
  eventBudget(id: string): string;
  /** hash "<block>/<arm>/<rep>" → JSON RepResult (committed attempts only) */
  results(id: string): string;
  /** hash "<block>/<arm>/<rep>" → JSON { reason, attempt } */
  failed(id: string): string;
  /** hash "<block>/<arm>" → JSON GateResult (committed attempts only) */
  gates(id: string): string;
  /** hash "<block>/<attempt>/<rank>" → JSON RankOutputTail: a failed rank's last lines (store/lua/fail-block.lua) */
  rankOutput(id: string): string;
  /** hash "<block>" → JSON { attempt, epoch, host, committed }: at most one committed attempt per block */
  commits(id: string): string;
  /** hash "<block>/<attempt>" → reps measured, "<block>/latest" → JSON LatestRep: running attempts' live count (store/rep-progress.ts) */
  progress(id: string): string;
  /** hash "<block>/<arm>/<rep>" → JSON ProbeRecord (design probe; read only for the block's committed attempt) */
  probes(id: string): string;
  /** hash host → JSON HostBuilds, and `:failed` → JSON BuildFailure: the experiment's build phase (store/experiment-builds.ts) */
  builds(id: string): string;
  /** string: JSON ExperimentOutcome of an ended experiment, written once by its first reader (orchestrator/experiment/experiment-outcome.ts) */
  outcome(id: string): string;
  /** string "HOST:PORT" with a TTL: where rank 0 of a spread gang's attempt listens (store/gang-staging.ts) */
  rendezvous(id: string, block: number, attempt: number): string;
  /** hash host → JSON StagedPart with a TTL: each non-leading part's results of a spread attempt */
  staged(id: string, block: number, attempt: number): string;
  /** hash key → base64 with a TTL: rank 0's bytes of each exchange of a command gang's attempt (lua/publish-exchange.lua) */
  exchange(id: string, block: number, attempt: number): string;
  /** hash "<op id>/<rank>" → host with a TTL: the ranks of a spread attempt that answered an op CAPTURE_FAILED (store/gang-staging.ts) */
  captureFailed(id: string, block: number, attempt: number): string;
  /** string: the attempt that claimed a suite's night, SET NX with a TTL (store/nightly-claims.ts) */
  nightlyClaim(suite: string, scheduledAt: number): string;
  /** string: a signed job's nonce, consumed once with a TTL past its grant's expiry (store/job-nonces.ts) */
  grantNonce(nonce: string): string;
  /** hash "<queue kind>/<code>" → count of jobs refused by a worker or orch serve (store/refused-jobs.ts) */
  refusedJobs: string;
  /** string with a TTL: why a suite's night could not be recorded in the history (store/nightly-claims.ts) */
  nightlyFault(suite: string, scheduledAt: number): string;
  /** the scheduler's own keys */
  sched: SchedulerKeys;
  /** the build lock's view, mirrored by each host (store/build-state.ts) */
  build: BuildKeys;
}

export interface SchedulerKeys {
  /** string: the leader's id, PX TTL (orchestrator/scheduler/leader-lease.ts) */
  leader: string;
  /** counter: submission order of experiments (FIFO across experiments) */
  seq: string;
  /** counter: the last part of every experiment id (store/experiment-store.ts newId) */
  ids: string;
  /** sorted set: experiment id by submission order */
  experiments: string;
  /** sorted set: experiments not yet ended, by submission order (the scheduler's queue) */
  active: string;
  /** hash block index → JSON BlockState (store/experiment-store.ts) */
  blocks(experiment: string): string;
  /** hash "<workload key>" → JSON { ms_per_step, n }: what past reps took, for expected durations */
  history: string;
  /** pub/sub channel: an experiment was submitted or cancelled, the leader's grant pass should run now (store/scheduler-wake.ts) */
  wake: string;
}

export interface BuildKeys {
  /** set of host names that ever built */
  hosts: string;
  /** hash { id, key, recipe, experiment, pid, since, cmd }, TTL */
  holder(host: string): string;
  /** zset request id → arrival time (ms) */
  waiters(host: string): string;
  /** JSON { key, recipe, experiment, pid, since }, TTL */
  waiter(host: string, id: string): string;
  /** list of JSON { ms, ok, key, host, at }, newest first */
  durations(recipe: string): string;
}

export function orchKeys(prefix: string = DEFAULT_PREFIX): OrchKeys {
  const p = prefix;
  return {
    prefix: p,
    cards: `${p}:cards`,
    host: (name) => `${p}:host:${name}`,
    hostAlive: (name) => `${p}:host:${name}:alive`,
    hostClaim: (name) => `${p}:host:${name}:claim`,
    lease: (card) => `${p}:lease:${card}`,
    leaseEpoch: `${p}:lease-epoch`,
    instance: `${p}:instance`,
    leaseRevoked: `${p}:lease-revoked`,
    // `experiment`, not `exp`: BullMQ keeps queue `exp`'s jobs at `<prefix>:exp:<jobId>`, so an
    // experiment hash at `<prefix>:exp:<id>` was the same key as a job whose id is the experiment id.
    exp: (id) => `${p}:experiment:${id}`,
    events: (id) => `${p}:experiment:${id}:events`,
    eventBudget: (id) => `${p}:experiment:${id}:event-budget`,
    results: (id) => `${p}:experiment:${id}:results`,
    failed: (id) => `${p}:experiment:${id}:failed`,
    gates: (id) => `${p}:experiment:${id}:gates`,
    rankOutput: (id) => `${p}:experiment:${id}:rank-output`,
    commits: (id) => `${p}:experiment:${id}:commits`,
    probes: (id) => `${p}:experiment:${id}:probes`,
    progress: (id) => `${p}:experiment:${id}:progress`,
    builds: (id) => `${p}:experiment:${id}:builds`,
    outcome: (id) => `${p}:experiment:${id}:outcome`,
    rendezvous: (id, block, attempt) => `${p}:experiment:${id}:rendezvous:${block}:${attempt}`,
    staged: (id, block, attempt) => `${p}:experiment:${id}:staged:${block}:${attempt}`,
    exchange: (id, block, attempt) => `${p}:experiment:${id}:exchange:${block}:${attempt}`,
    captureFailed: (id, block, attempt) => `${p}:experiment:${id}:capture-failed:${block}:${attempt}`,
    nightlyClaim: (suite, scheduledAt) => `${p}:nightly:claim:${suite}:${scheduledAt}`,
    grantNonce: (nonce) => `${p}:grant-nonce:${nonce}`,
    refusedJobs: `${p}:refused-jobs`,
    nightlyFault: (suite, scheduledAt) => `${p}:nightly:fault:${suite}:${scheduledAt}`,
    sched: {
      leader: `${p}:sched:leader`,
      seq: `${p}:sched:seq`,
      ids: `${p}:sched:ids`,
      experiments: `${p}:exps`,
      active: `${p}:sched:active`,
      blocks: (id) => `${p}:experiment:${id}:blocks`,
      history: `${p}:sched:history`,
      wake: `${p}:sched:wake`,
    },
    build: {
      hosts: `${p}:build:hosts`,
      holder: (host) => `${p}:build:${host}:holder`,
      waiters: (host) => `${p}:build:${host}:waiters`,
      waiter: (host, id) => `${p}:build:${host}:waiter:${id}`,
      durations: (recipe) => `${p}:build:recipe:${recipe}:durations`,
    },
  };
}

/** `"<block>/<arm>/<rep>"`: the field of results and failed is a rep's one key, made with its identity (jobs/rep-ref.ts). */
export { repKey } from '../jobs/rep-ref.ts';

/** `"<block>/<arm>"`: the field of gates. */
export function gateField(block: number, arm: string): string {
  return `${block}/${arm}`;
}
