/**
 * `orch worker`: the per-host daemon. Discovers the host's cards, registers them with a
 * heartbeat, consumes the host's dispatch queue (`host-<name>`) and runs each block on its leased
 * gang through the BlockExecutor. Listens for lease revocations so a revoked gang's ranks die at
 * once rather than at the next renew, and for cancel notices on the same channel, on which a
 * running block stops gracefully: it commits what it measured, the rest `cancelled`.
 *
 * Timing (options, defaults for production; tests shorten them):
 *   heartbeatMs (2 s)  host alive key refreshed; lease renew period of a running gang
 *   the host alive key and every renewed lease live 2 × heartbeatMs, so a worker killed with -9
 *   frees its cards within two heartbeats.
 *
 * Builds: a second queue, `build-<name>`, carries an experiment's builds before any card of this
 * host is leased to it (worker/builds/build-job-processor.ts); it holds no lease and takes no
 * block's slot.
 *
 * Graceful stop (SIGTERM → stop()): no new job is taken, each running block finishes its rep in
 * flight, commits what it measured with the rest reported "not run", releases its leases; then
 * the host goes offline and the connections close. All of that needs Redis: when it has not
 * finished within stopLimitMs (10 s; Redis gone), every running block is failed (its ranks
 * killed) and the connections are cut; stop() returns regardless.
 *
 * Under Slurm (options.slurm): the cards are those Slurm gave the step (worker/slurm/slurm-cards.ts),
 * each registered with `until`, the allocation's end less the drain margin, kept current by
 * worker/slurm/allocation-clock.ts, which also stops the worker at `until` or when the stop file
 * appears; the job's id, node list and partition are registered as the host's provenance.
 */
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { Worker as BullWorker, type Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { BlockOutcome } from '../jobs/block-outcome.ts';
import type { BuildJob } from '../jobs/build-job.ts';
import { OrchError, UserInputError } from '../jobs/errors.ts';
import { messageOf } from '../jobs/message-of.ts';
import { HOST_NAME_PATTERN } from '../jobs/name-patterns.ts';
import type { SlurmAllocation } from '../jobs/slurm-allocation.ts';
import { type Capability, workerCapabilities } from '../jobs/worker-capabilities.ts';
import { formatWorkerVersion } from '../jobs/worker-version.ts';
import { parseLeaseChannelMessage } from '../store/cancel-notice.ts';
import { type Card, CardRegistry } from '../store/card-registry.ts';
import { requireClusterSecret } from '../store/cluster-secret.ts';
import { connectRedis, readyWithin, requireNoEviction, requireRedisAuth } from '../store/connect.ts';
import { ExperimentStore, TERMINAL_EXPERIMENT_STATES } from '../store/experiment-store.ts';
import { GangStaging } from '../store/gang-staging.ts';
import { HostClaim } from '../store/host-claim.ts';
import { JobAdmission } from '../store/job-admission.ts';
import { toJobError } from '../store/job-error.ts';
import { JobNonces } from '../store/job-nonces.ts';
import { DEFAULT_PREFIX, hostBuildQueue, hostQueue, orchKeys } from '../store/keys.ts';
import { LeaseStore } from '../store/lease-store.ts';
import { defaultStateDir, ensureLockFile, ensurePrivateDir } from '../store/private-dir.ts';
import { RedisInstance, warnIfNotPersistent } from '../store/redis-instance.ts';
import { RefusedJobs } from '../store/refused-jobs.ts';
import { RepProgress } from '../store/rep-progress.ts';
import { ResultStore } from '../store/result-store.ts';
import { BlockExecutor, cardLockPath } from './block-executor.ts';
import { BuildCache, defaultBuildRoot } from './builds/build-cache.ts';
import { shareBuildRoot } from './builds/build-cache-sharing.ts';
import { runBuildJob } from './builds/build-job-processor.ts';
import { CommandRankRunner, runnerByRuntime } from './command/command-rank-runner.ts';
import { injectLibFor } from './command/inject-lib-sharing.ts';
import { injectLibPath } from './command/launch-counter.ts';
import { type FirstPrepared, prepareFirstBlocks } from './command/prepare-first.ts';
import { discoverCards } from './discover-cards.ts';
import { EventStream } from './event-stream.ts';
import { type ForeignProcessProbe, HostForeignProcessProbe } from './foreign-processes.ts';
import { GraphrtRunner } from './graphrt-runner.ts';
import { LeaseMessageCheck } from './lease-message-check.ts';
import { preflightGraphrt } from './preflight/preflight.ts';
import type { RankRunner } from './rank-runner.ts';
import type { RunAs } from './run-as.ts';
import { AllocationClock } from './slurm/allocation-clock.ts';
import { slurmCards } from './slurm/slurm-cards.ts';

export interface WorkerOptions {
  redisUrl: string;
  host?: string;
  cards?: 'auto' | string[];
  cpuCards?: number;
  /** the rank binary (graphrt, or a fixture that speaks its protocol) */
  graphrt: string;
  /** the Redis is the embedded default's own (cli/embedded/): its not persisting is no warning */
  privateRedis?: boolean;
  /** the card lock directory (default: $XDG_RUNTIME_DIR/orch/cards, else ~/.cache/orch/cards); must be private */
  lockDir?: string;
  /** the host's build cache for command workloads (default: $ORCH_BUILD_DIR, else ~/.cache/orch/builds) */
  buildDir?: string;
  prefix?: string;
  heartbeatMs?: number;
  requestTimeoutMs?: number;
  foreignPollMs?: number;
  closeGraceMs?: number;
  /** longest graceful stop before the connections are cut (default 10 s) */
  stopLimitMs?: number;
  /** accept a Redis that answers without a password (warned about); default: refuse it */
  insecureRedis?: boolean;
  /**
   * The cluster secret every host job's grant must verify with (jobs/grant.ts); default: from
   * ORCH_CLUSTER_SECRET_FILE or ORCH_CLUSTER_SECRET (store/cluster-secret.ts).
   */
  secret?: Buffer;
  /** run command workloads (a user's binary) at all, and build commits; default false: only graphrt */
  allowCommand?: boolean;
  /** the user command workloads' programs run as (worker/run-as.ts); absent: the worker's own */
  runAs?: RunAs;
  /** build commits of a repository (`builds:`: their CMakeLists.txt or recipe runs here); default false */
  allowBuild?: boolean;
  /**
   * The orch this worker runs (version and commit, cli/version.ts): registered with the cards,
   * together with graphrt's hello version, as the worker's version (jobs/worker-version.ts).
   */
  orchVersion?: { version: string; commit: string };
  /** the Slurm allocation this worker runs in (jobs/slurm-allocation.ts); absent: not under Slurm */
  slurm?: WorkerSlurmOptions;
  log: Logger;
  /** seams for other workloads and for tests on machines without nvidia-smi */
  runner?: RankRunner;
  probe?: ForeignProcessProbe;
}

export interface WorkerSlurmOptions {
  alloc: SlurmAllocation;
  /** how long before the allocation's end the worker stops taking work and stops */
  drainMs: number;
  /** reads the allocation's end again (squeue): a changed time limit moves it */
  readEnd: () => Promise<number | null>;
  refreshMs?: number;
  /** a file whose appearance stops the worker gracefully (orch slurm down, the pre-timeout signal's trap) */
  stopFile?: string;
  /** where a spread gang's rank 0 listens: the node's Slurm NodeAddr (worker/slurm/node-address.ts); absent: advertise-address.ts */
  advertise?: string;
}

export function defaultHost(): string {
  return (
    hostname()
      .split('.')[0]
      ?.replace(/[^A-Za-z0-9_.@-]/g, '-') || 'localhost'
  );
}

export class Worker {
  readonly host: string;
  private readonly prefix: string;
  private readonly heartbeatMs: number;
  private readonly log: Logger;
  private redis: Redis | null = null;
  private sub: Redis | null = null;
  private bull: BullWorker | null = null;
  /** the host's build queue (store/keys.ts hostBuildQueue): an experiment's builds, before any card is leased to it */
  private builds: BullWorker | null = null;
  /** the host and build queues as producers: only to remove a job scheduler someone else put there (job-admission.ts) */
  private admissionQueues: Queue[] = [];
  private heartbeat: NodeJS.Timeout | undefined;
  private stopping = false;
  private stopped: Promise<void> | null = null;
  /** why the worker stops, first cause first: said in the reason of a block it hands back */
  private stopCause: string | null = null;
  private executor: BlockExecutor | null = null;
  /** the command runtime's runner: its host-phase slots end with the worker (worker/command/prepared-slots.ts) */
  private commandRunner: CommandRankRunner | null = null;
  /** this worker's claim of its host name, held from start to a clean stop */
  private claim: HostClaim | null = null;
  private readonly secret: Buffer;
  /** what this worker runs beyond graphrt of its own checkout, registered with its cards */
  private readonly caps: Capability[];
  /** orch's injection library as the programs load it (command/inject-lib-sharing.ts); null: not built */
  private readonly injectLib: string | null;
  cards: Card[] = [];
  /** what this worker registers as its version (jobs/worker-version.ts) */
  private version: string | undefined;
  /** revoke-channel messages that Redis state did not bear out (lease-message-check.ts) */
  private unconfirmedLeaseMessages = 0;
  private clock: AllocationClock | null = null;
  private ended!: () => void;
  /** settles when the worker has stopped, by a signal's stop() or by its own (the allocation's end) */
  readonly done = new Promise<void>((resolve) => (this.ended = resolve));

  constructor(private readonly opts: WorkerOptions) {
    this.host = opts.host ?? defaultHost();
    if (!HOST_NAME_PATTERN.test(this.host)) {
      throw new UserInputError(
        'HOST_NAME',
        `--host "${this.host}": use only letters, digits and _ . @ - (it becomes a queue name)`,
      );
    }
    this.prefix = opts.prefix ?? DEFAULT_PREFIX;
    this.heartbeatMs = opts.heartbeatMs ?? 2000;
    this.log = opts.log.child({ host: this.host });
    this.secret = opts.secret ?? requireClusterSecret(`the worker of host ${this.host}`);
    this.caps = workerCapabilities(opts);
    // before anything else: a build cache its programs cannot reach refuses the start
    const buildRoot = resolve(opts.buildDir ?? defaultBuildRoot());
    if (opts.runAs !== undefined) shareBuildRoot(buildRoot, opts.runAs);
    this.injectLib = injectLibFor(injectLibPath(opts.graphrt), buildRoot, opts.runAs ?? null);
  }

  /**
   * The gate in front of the executor: a job runs only with a grant the scheduler signed with
   * the cluster secret over everything BullMQ acts on, whose nonce is unused (job-admission.ts),
   * a command workload only on a worker that allows commands, a build of a commit only on one
   * that allows builds (the scheduler grants them only there: this is the second line). Anything
   * else fails unrecoverably before a card, a rank or a build is touched.
   */
  private async admit(gate: JobAdmission, job: Job): Promise<void> {
    await gate.admit(job);
    // verified: the payload is the scheduler's own
    const data = job.data as {
      experiment?: unknown;
      block?: unknown;
      epoch?: unknown;
      workload?: { runtime?: unknown };
      builds?: { builds?: unknown } | null;
    };
    const about = { job: job.id, experiment: data.experiment, block: data.block, epoch: data.epoch };
    if (data.workload?.runtime === 'command' && !(this.opts.allowCommand ?? false)) {
      this.log.error(
        { ...about, code: 'COMMAND_NOT_ALLOWED' },
        'refused a command workload: this worker runs no commands',
      );
      throw new UserInputError(
        'COMMAND_NOT_ALLOWED',
        `job ${job.id ?? '?'}: a command workload reached the worker of host ${this.host}, which was started without --allow-command; nothing ran`,
        {
          hint: 'start the worker with --allow-command, or run the experiment on hosts whose workers allow commands',
        },
      );
    }
    const commits = data.builds?.builds;
    if (
      typeof commits === 'object' &&
      commits !== null &&
      Object.keys(commits).length > 0 &&
      !this.caps.includes('build')
    ) {
      this.log.error(
        { ...about, code: 'BUILD_NOT_ALLOWED' },
        'refused a build of a commit: this worker builds no commits',
      );
      throw new UserInputError(
        'BUILD_NOT_ALLOWED',
        `job ${job.id ?? '?'}: builds of commits (${Object.keys(commits).join(', ')}) reached the worker of host ${this.host}, which was started without --allow-build or --allow-command; building a commit runs its code (CMakeLists.txt, the build recipe), so nothing ran`,
        {
          hint: 'start the worker with --allow-build (or --allow-command), or run the experiment on hosts whose workers allow builds',
        },
      );
    }
  }

  /**
   * A message of the revoke channel: a cancel notice stops the gang gracefully (it commits what it
   * measured), a revocation kills it — each only once Redis bears it out, since anyone who can
   * reach Redis can publish. An unconfirmed one is logged without its text and counted.
   */
  private async onLeaseMessage(raw: string, executor: BlockExecutor, check: LeaseMessageCheck): Promise<void> {
    try {
      const m = parseLeaseChannelMessage(raw);
      const parts = executor.matching(m.cards, m.epochs);
      const confirmed: number[] = [];
      for (const part of parts) if (await check.confirms(m, part)) confirmed.push(part.epoch);
      if (confirmed.length < parts.length) {
        this.unconfirmedLeaseMessages++;
        this.log.warn(
          {
            kind: m.kind,
            epochs: parts.map((p) => p.epoch).filter((e) => !confirmed.includes(e)),
            unconfirmed: this.unconfirmedLeaseMessages,
          },
          'lease channel message not borne out by Redis state: ignored',
        );
      }
      if (confirmed.length === 0) return;
      if (m.kind === 'cancel') executor.cancelled(m.cards, confirmed, m.reason);
      else executor.revoked(m.cards, confirmed, m.reason);
    } catch (err) {
      this.log.warn({ err: messageOf(err), bytes: raw.length }, 'unreadable lease channel message');
    }
  }

  private registration(ttlMs: number): {
    ttlMs: number;
    pid: number;
    version?: string;
    caps: Capability[];
    slurm?: SlurmAllocation['provenance'];
  } {
    const slurm = this.opts.slurm?.alloc.provenance;
    return {
      ttlMs,
      pid: process.pid,
      ...(this.version ? { version: this.version } : {}),
      caps: this.caps,
      ...(slurm ? { slurm } : {}),
    };
  }

  /** The cards as registered: under Slurm each with the last moment a lease on it may be held. */
  private registered(): Card[] {
    const until = this.clock?.until();
    return until === undefined ? this.cards : this.cards.map((c) => ({ ...c, until }));
  }

  /** Slurm's cards for the step, or the host's own discovery. */
  private async findCards(): Promise<Card[]> {
    const slurm = this.opts.slurm;
    if (slurm) return slurmCards(this.host, slurm.alloc, { cpuCards: this.opts.cpuCards });
    return discoverCards(this.host, { cards: this.opts.cards ?? 'auto', cpuCards: this.opts.cpuCards });
  }

  /** Under Slurm: the allocation's end, kept current on the registered cards, and the stop before it. */
  private followAllocation(registry: CardRegistry, ttl: number): void {
    const slurm = this.opts.slurm;
    if (!slurm) return;
    this.clock = new AllocationClock({
      end: slurm.alloc.provenance.end,
      drainMs: slurm.drainMs,
      readEnd: slurm.readEnd,
      refreshMs: slurm.refreshMs,
      stopFile: slurm.stopFile,
      onUntil: (until) => {
        this.log.info(
          { until: until === undefined ? null : new Date(until).toISOString() },
          "the last moment to hold a lease moved (the allocation's time limit changed, or the worker stops): registering the cards again",
        );
        registry
          .register(this.host, this.registered(), this.registration(ttl))
          .catch((err: unknown) => this.log.warn({ err }, 'registering the new end failed'));
      },
      onStop: (why) => {
        this.log.info({ why }, 'stopping: the Slurm allocation ends');
        void this.stop(why);
      },
    });
    this.clock.start();
  }

  /** graphrt's hello version; `none` where hello fails (not built yet): the host still serves command workloads. */
  private async graphrtBuild(): Promise<string> {
    try {
      return (await preflightGraphrt(this.opts.graphrt, 'auto')).version;
    } catch (err) {
      this.log.warn({ err, graphrt: this.opts.graphrt }, 'graphrt hello failed: registering graphrt version none');
      return 'none';
    }
  }

  async start(): Promise<void> {
    const redis = await this.connect();
    const ttl = 2 * this.heartbeatMs;
    await this.claimHost(redis, ttl);
    const lockDir = await this.registerCards(redis, ttl);
    const keys = orchKeys(this.prefix);
    const cache = new BuildCache({
      root: this.opts.buildDir,
      host: this.host,
      redis,
      prefix: this.prefix,
      runAs: this.opts.runAs ?? null,
    });
    const events = (experiment: string) =>
      new EventStream(
        redis,
        { stream: keys.events(experiment), exp: keys.exp(experiment), budget: keys.eventBudget(experiment) },
        this.log,
      );
    const executor = this.blockExecutor(redis, lockDir, ttl, cache, events);
    this.executor = executor;
    await this.followLeaseChannel(redis, executor);
    this.serveQueues(redis, executor, cache, events);
    this.log.info({ cards: this.cards.map((c) => c.id), queue: hostQueue(this.host) }, 'worker ready');
  }

  /** Redis, as long as it takes to come up (a refused password is an error at once), checked for the policy and a password. */
  private async connect(): Promise<Redis> {
    const redis = connectRedis(this.opts.redisUrl, { log: this.log, name: `orch-worker-${this.host}` });
    this.redis = redis;
    this.log.info('connecting to redis');
    await readyWithin(redis, this.opts.redisUrl, { timeoutMs: Infinity });
    await requireNoEviction(redis, this.opts.redisUrl);
    await requireRedisAuth(redis, this.opts.redisUrl, {
      allowInsecure: this.opts.insecureRedis ?? false,
      log: this.log,
      who: 'this worker',
    });
    return redis;
  }

  /** The host's name, before anything of the host is registered: a second worker under this name is refused here. */
  private async claimHost(redis: Redis, ttl: number): Promise<void> {
    const claim = new HostClaim(redis, this.host, { prefix: this.prefix });
    await claim.take(ttl, (h) =>
      this.log.warn(
        { holder: h },
        `host name ${this.host}: the worker that held it (pid ${h.pid}) is gone without releasing it; waiting up to ${ttl} ms for its claim to expire`,
      ),
    );
    this.claim = claim;
  }

  /** Discovers the cards, makes their lock files, registers them and keeps them registered; returns the lock directory. */
  private async registerCards(redis: Redis, ttl: number): Promise<string> {
    this.cards = await this.findCards();
    // the host guard's lock files: in a private directory, created here without following links
    const lockDir = ensurePrivateDir(this.opts.lockDir ?? join(defaultStateDir(), 'cards'), 'the card lock directory');
    for (const c of this.cards) ensureLockFile(cardLockPath(lockDir, c.id));
    const registry = new CardRegistry(redis, { prefix: this.prefix });
    // the embedded default's Redis is private and lives as long as the command: nothing to keep
    if (this.opts.privateRedis !== true) await warnIfNotPersistent(redis, this.log, 'this worker');
    const instance = new RedisInstance(redis, this.prefix);
    await instance.claim();
    this.version = this.opts.orchVersion
      ? formatWorkerVersion({
          orch: this.opts.orchVersion.version,
          commit: this.opts.orchVersion.commit,
          graphrt: await this.graphrtBuild(),
        })
      : undefined;
    this.followAllocation(registry, ttl);
    await registry.register(this.host, this.registered(), this.registration(ttl));
    let beating = false;
    this.heartbeat = setInterval(() => {
      // one at a time: to a Redis that does not answer, a beat per period would only queue up
      if (beating) return;
      beating = true;
      this.beat(registry, instance, ttl)
        .catch((err: unknown) => this.log.warn({ err }, 'heartbeat failed'))
        .finally(() => (beating = false));
    }, this.heartbeatMs);
    return lockDir;
  }

  /** A build job's `prepare` cards: the first blocks' ranks in the host phase, in the command runner's slots. */
  private prepareFirst(job: BuildJob, cache: BuildCache): Promise<FirstPrepared[]> {
    if (this.commandRunner === null)
      throw new OrchError('BUILD_JOB_INVALID', `build job of ${job.experiment}: this worker has no command runner yet`);
    return prepareFirstBlocks(job, {
      cache,
      cards: new Map(this.cards.map((c) => [c.id, c])),
      slots: this.commandRunner.prepared,
      injectLib: this.injectLib,
      runAs: this.opts.runAs ?? null,
      log: this.log.child({ experiment: job.experiment }),
    });
  }

  private blockExecutor(
    redis: Redis,
    lockDir: string,
    ttl: number,
    cache: BuildCache,
    events: (experiment: string) => EventStream,
  ): BlockExecutor {
    // kept, so that the worker's stop ends the prepared ranks it holds
    this.commandRunner = new CommandRankRunner({
      cache,
      runAs: this.opts.runAs ?? null,
      injectLib: this.injectLib,
      graphrt: existsSync(this.opts.graphrt) ? this.opts.graphrt : null,
    });
    return new BlockExecutor(
      {
        host: this.host,
        cards: new Map(this.cards.map((c) => [c.id, c])),
        lockDir,
        leaseTtlMs: ttl,
        renewEveryMs: this.heartbeatMs,
        requestTimeoutMs: this.opts.requestTimeoutMs ?? 30 * 60_000,
        foreignPollMs: this.opts.foreignPollMs ?? 1000,
        closeGraceMs: this.opts.closeGraceMs ?? 5000,
        rendezvousKey: this.secret,
        ...(this.opts.slurm ? { slurm: this.opts.slurm.alloc.provenance } : {}),
        ...(this.opts.slurm?.advertise ? { advertise: this.opts.slurm.advertise } : {}),
      },
      {
        leases: new LeaseStore(redis, { prefix: this.prefix }),
        results: new ResultStore(redis, { prefix: this.prefix }),
        progress: new RepProgress(redis, this.prefix),
        runner:
          this.opts.runner ??
          runnerByRuntime({
            native: new GraphrtRunner(this.opts.graphrt, { cache }),
            command: this.commandRunner,
          }),
        probe: this.opts.probe ?? new HostForeignProcessProbe(),
        events,
        log: this.log,
        stopping: () => this.stopping,
        stopCause: () => this.stopCause ?? 'stopped',
        // an allocation that ends takes its cards for good: the block goes elsewhere whole
        stopRequeues: this.opts.slurm !== undefined,
        staging: new GangStaging(redis, { prefix: this.prefix }),
      },
    );
  }

  /** Revocations and cancel notices, on a connection of their own (a subscriber can do nothing else). */
  private async followLeaseChannel(redis: Redis, executor: BlockExecutor): Promise<void> {
    const keys = orchKeys(this.prefix);
    const sub = redis.duplicate();
    this.sub = sub;
    // a duplicate has none of connectRedis' listeners: without one, ioredis reports every failed reconnect as an unhandled error event
    sub.on('error', (err: Error) => this.log.debug({ err: err.message }, 'lease revocation subscriber: redis error'));
    await sub.subscribe(keys.leaseRevoked);
    const check = new LeaseMessageCheck(redis, this.prefix);
    sub.on('message', (_channel: string, message: string) => void this.onLeaseMessage(message, executor, check));
  }

  /** The host's block and build queues, each job through its admission gate first. */
  private serveQueues(
    redis: Redis,
    executor: BlockExecutor,
    cache: BuildCache,
    events: (experiment: string) => EventStream,
  ): void {
    const admission = {
      secret: this.secret,
      nonces: new JobNonces(redis, this.prefix),
      refused: new RefusedJobs(redis, this.prefix),
      log: this.log,
    };
    const producer = (name: string) => new Queue(name, { connection: redis, prefix: this.prefix });
    this.admissionQueues = [producer(hostQueue(this.host)), producer(hostBuildQueue(this.host))];
    const blockGate = new JobAdmission('host', this.admissionQueues[0]!, admission);
    const buildGate = new JobAdmission('build', this.admissionQueues[1]!, admission);
    this.bull = new BullWorker<unknown, BlockOutcome>(
      hostQueue(this.host),
      async (job) => {
        try {
          await this.admit(blockGate, job);
        } catch (err) {
          // the code first: it is what the report recognizes a refusal by (orchestrator/stats/refused-grants.ts)
          throw toJobError(err, err instanceof OrchError ? `${err.code}: ${err.message}` : undefined);
        }
        return executor.execute(job.data);
      },
      {
        connection: redis,
        prefix: this.prefix,
        // leases, not BullMQ, are the card mutex; a slot per card plus one so a gang's release and
        // the next grant never wait for a slot
        concurrency: this.cards.length + 1,
        // a stalled host job is a lost attempt: the scheduler re-dispatches it as attempt + 1
        maxStalledCount: 0,
      },
    );
    this.bull.on('error', (err) => this.log.error({ err }, 'queue worker error'));
    this.builds = new BullWorker(
      hostBuildQueue(this.host),
      async (job) => {
        try {
          await this.admit(buildGate, job);
          return await runBuildJob(job.data, {
            host: this.host,
            cache,
            events,
            log: this.log,
            prepareFirst: (j) => this.prepareFirst(j, cache),
          });
        } catch (err) {
          throw toJobError(err, err instanceof OrchError ? `${err.code}: ${err.message}` : undefined);
        }
      },
      {
        connection: redis,
        prefix: this.prefix,
        // the host build lock serializes the builds themselves; more than one job lets a cached
        // experiment's builds answer while another's build runs
        concurrency: 4,
        // a build whose worker died is tried again by the scheduler as attempt + 1
        maxStalledCount: 0,
      },
    );
    this.builds.on('error', (err) => this.log.error({ err }, 'build queue worker error'));
    this.bull.on('failed', (job, err) => this.log.warn({ job: job?.id, reason: err.message }, 'block attempt failed'));
  }

  /**
   * One heartbeat. A Redis that lost its data (its instance marker changed) has no card of this
   * host: they are registered again, so the scheduler sees them at once; the gangs that ran
   * there lose their leases and fail by the lease keeper.
   */
  private async beat(registry: CardRegistry, instance: RedisInstance, ttl: number): Promise<void> {
    const other = await this.claim?.takeOrKeep(ttl);
    if (other) {
      // This worker's claim expired (Redis unreachable past two heartbeats) and another worker
      // took the name: registering again would take its cards away.
      this.log.error(
        { holder: other },
        `another worker (pid ${other.pid} on ${other.machine}) now serves host name ${this.host}: this worker no longer registers its cards; stop it`,
      );
      return;
    }
    if (await instance.lostSinceLastCheck()) {
      this.log.error(
        { running: this.executor?.running ?? 0 },
        'Redis lost its data (restarted without persistence?): its instance marker changed; registering the cards again, the running blocks fail on their lost leases',
      );
      await registry.register(this.host, this.registered(), this.registration(ttl));
      return;
    }
    const wasAlive = await registry.heartbeat(this.host, ttl);
    if (!wasAlive) this.log.warn('host heartbeat was late: the host looked dead for a moment');
    await this.dropEndedPrepared();
  }

  /**
   * Rank processes prepared for an experiment that ended or is being cancelled (before any of
   * its blocks got a card here, or between two) are ended now, not at their keep time: a
   * prepare() may hold gigabytes of weights in host memory.
   */
  private async dropEndedPrepared(): Promise<void> {
    const slots = this.commandRunner?.prepared;
    const held = slots?.experiments() ?? [];
    if (slots === undefined || held.length === 0 || this.redis === null) return;
    const states = await new ExperimentStore(this.redis, this.prefix).states(held);
    for (const [i, id] of held.entries()) {
      const state = states[i] ?? null;
      if (state !== null && state !== 'cancelling' && !TERMINAL_EXPERIMENT_STATES.has(state)) continue;
      const n = slots.dropExperiment(id);
      this.log.info({ experiment: id, state, ended: n }, 'prepared rank processes of an experiment that ended, ended');
    }
  }

  /** Graceful stop, bounded by stopLimitMs; see the file comment. Idempotent; `why` the first caller's cause. */
  stop(why = 'stopped'): Promise<void> {
    this.stopCause ??= why;
    this.clock?.close();
    this.stopped ??= this.stopWithin(this.opts.stopLimitMs ?? 10_000).finally(() => this.ended());
    return this.stopped;
  }

  private async stopWithin(limitMs: number): Promise<void> {
    this.stopping = true;
    this.log.info({ running: this.executor?.running ?? 0 }, 'stopping: finishing the reps in flight');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), limitMs)));
    const graceful = this.drain().then(() => 'done' as const);
    const how = await Promise.race([graceful, late]);
    clearTimeout(timer);
    // a next block's process started in the host phase has no block here any more
    this.commandRunner?.prepared.dropAll();
    if (how === 'late') {
      this.log.error(
        { running: this.executor?.running ?? 0, limit_ms: limitMs },
        'graceful stop did not finish in time (Redis unreachable?): killing the running ranks and cutting the connections',
      );
      clearInterval(this.heartbeat);
      this.executor?.abortAll(
        `the worker of host ${this.host} was stopped and could not finish gracefully within ${limitMs} ms`,
      );
      void this.bull?.close(true).catch(() => {});
      void this.builds?.close(true).catch(() => {});
      this.sub?.disconnect();
      this.redis?.disconnect();
      // a moment for the ranks' exits; pending Redis calls may never settle, so no waiting on them
      await Promise.race([graceful, new Promise((r) => setTimeout(r, 2000).unref())]);
    }
    this.log.info('stopped');
  }

  private async drain(): Promise<void> {
    // a build in progress is not waited for: its job stalls and the scheduler tries it again
    await Promise.all([this.bull?.close(), this.builds?.close(true), ...this.admissionQueues.map((q) => q.close())]);
    clearInterval(this.heartbeat);
    if (this.redis) {
      await new CardRegistry(this.redis, { prefix: this.prefix }).goOffline(this.host).catch(() => {});
      await this.claim?.release().catch(() => {});
    }
    this.sub?.disconnect();
    this.redis?.disconnect();
  }
}
