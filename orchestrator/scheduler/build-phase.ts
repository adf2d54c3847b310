/**
 * The build phase of an experiment that builds: builds as arms (jobs/build-refs.ts), or a
 * command workload's own build of the user's checkout (`workload.build`, with no `builds:`).
 * Every host that may run its blocks builds them before any of its cards is leased to the
 * experiment, so a build that fails, or takes ten minutes, never does so on leased cards.
 *
 * - Each candidate host (alive, with cards of the experiment's backend that can hold a gang)
 *   gets one build job on its build queue (`build-<host>`, jobs/build-job.ts), with a
 *   deterministic id per attempt. The worker makes every build into the host's cache
 *   (worker/builds/ensure-experiment-builds.ts) holding no lease; the host build lock and the
 *   cache serialize and share them with every other request on that host.
 * - The grant pass asks `gate()`: a block of the experiment may go only to a host whose job
 *   completed. A host still building is no candidate for it, and the block takes no
 *   reservation meanwhile (grant-planner.ts), so other experiments' blocks keep the cards busy.
 * - A failure the registry does not retry (BUILD_FAILED, BUILD_COMMIT_MISSING, … : the same
 *   commit fails the same way) ends the experiment before its blocks get cards: the failure is
 *   recorded once (store/experiment-builds.ts), every waiting block ends failed with it and
 *   every planned rep of those blocks is recorded not run with it; the grant pass releases the
 *   block processors waiting for a grant, which find their block ended.
 * - A transient one (the host died mid-build, the build lock could not be taken) is tried again
 *   as attempt + 1 on that host once it is alive, at most maxAttempts times; other hosts build
 *   meanwhile. When every candidate host has used its attempts, the experiment fails with
 *   BUILD_ATTEMPTS_EXHAUSTED.
 *
 * Only the leader runs it (begin/end with the term): it writes block states.
 */
import { Job, Queue } from 'bullmq';
import { type BuildJob, BuildJobSchema, buildsOfArms, MAX_PREPARE_PER_HOST } from '../../jobs/build-job.ts';
import { blockBuilds } from '../../jobs/build-refs.ts';
import { isTraceProbe } from '../../jobs/compile-spec.ts';
import { codeOf } from '../../jobs/error-codes.ts';
import { signJob } from '../../jobs/grant.ts';
import { gangPlacement } from '../../jobs/plan.ts';
import { allows, specNeeds } from '../../jobs/worker-capabilities.ts';
import type { Card } from '../../store/card-registry.ts';
import { requireClusterSecret } from '../../store/cluster-secret.ts';
import {
  type BuildFailure,
  ExperimentBuildStore,
  type ExperimentBuilds,
  type HostBuilds,
} from '../../store/experiment-builds.ts';
import type { ExperimentRecord } from '../../store/experiment-store.ts';
import { buildJobId, hostBuildQueue } from '../../store/keys.ts';
import { failWaitingBlocks } from './fail-waiting-blocks.ts';
import { cardNeed, cardServes } from './grant-planner.ts';
import type { SchedulerContext, Term } from './scheduler-context.ts';

/** What the grant pass may do with an experiment's blocks: null when it has no build phase. */
export type BuildGate = { failed: string } | { hosts: ReadonlySet<string>; hostsWhy: string };

/** How often a build in flight is looked at (its job's state), at most. */
const BUILDING_POLL_MS = 200;

/**
 * Whether the experiment builds before its blocks get cards: it has builds as arms, or its
 * command workload builds the user's checkout (the build the rank path would otherwise make
 * after the lease, a failing or slow one holding the leased cards idle), or its first blocks'
 * ranks start in the host phase before their lease (preparesBeforeLease).
 */
export function hasBuildPhase(exp: Pick<ExperimentRecord, 'spec' | 'plan'>): boolean {
  const w = exp.spec.workload;
  return (
    Object.keys(exp.spec.builds ?? {}).length > 0 ||
    (w.runtime === 'command' && w.build !== undefined) ||
    preparesBeforeLease(exp)
  );
}

/**
 * A resident command rank alone on its card, out of a trace probe: the build job of each host
 * also starts the first blocks' rank processes in the host phase (their prepare(): imports,
 * weights read into host memory, with no device visible) and ends once they have prepared, so
 * the first block's lease is not spent on it either (worker/command/prepare-first.ts). Later
 * blocks' ranks are prepared while the block before holds the card (resident-command-rank.ts).
 * Builds as arms are left out: each arm's rank runs another build.
 */
export function preparesBeforeLease(exp: Pick<ExperimentRecord, 'spec' | 'plan'>): boolean {
  const w = exp.spec.workload;
  return (
    w.runtime === 'command' &&
    w.run.mode === 'resident' &&
    exp.plan.ranks === 1 &&
    !isTraceProbe(exp.spec) &&
    Object.keys(exp.spec.builds ?? {}).length === 0
  );
}

/**
 * The build job of one host (unsigned): the builds the plan's arms name, and the workload's own
 * when an arm names none; `prepare`, the host's cards whose first blocks' ranks start in the host
 * phase (preparesBeforeLease, prepareCards: one per block over the cluster).
 */
export function buildJobOf(
  exp: Pick<ExperimentRecord, 'id' | 'spec' | 'plan'>,
  host: string,
  attempt: number,
  prepare: readonly string[] = [],
): BuildJob {
  const all = blockBuilds(exp.spec);
  const w = exp.spec.workload;
  const { named, own } = buildsOfArms(exp.plan.arms, w.runtime === 'command' && w.build !== undefined);
  // a host past the blocks' prepare()s still gets its (empty) job: its blocks then start in the lease
  if (!all && !own && !preparesBeforeLease(exp)) throw new Error(`experiment ${exp.id} has no builds`);
  const builds = all
    ? {
        builds: {
          repo: all.repo,
          builds: Object.fromEntries(Object.entries(all.builds).filter(([n]) => named.includes(n))),
        },
      }
    : {};
  return BuildJobSchema.parse({
    experiment: exp.id,
    host,
    attempt,
    epoch: attempt,
    workload: w,
    ...builds,
    own,
    ...(prepare.length === 0 ? {} : { prepare: [...prepare] }),
  });
}

/**
 * Per host, the cards whose first blocks' ranks its build job prepares: those that can serve the
 * experiment, host by host in `hosts`' order, one per block of the experiment in all; when the
 * blocks outnumber the cards, a second round names each card again, for the block that follows
 * its first (prepare-first.ts puts it in the card's spare slot): the first block is the spec's own
 * size and may end before the second's prepare(), started at its start, would. Bounded so, an
 * experiment of 8 blocks on a cluster of 64 hosts of 8 cards starts 8 prepare()s, not 512, and
 * a card never more than two; a first block granted on a host that prepared none starts inside
 * its lease, as before.
 */
export function prepareCards(
  exp: Pick<ExperimentRecord, 'spec' | 'plan'>,
  hosts: Iterable<string>,
  cards: readonly Pick<Card, 'id' | 'host' | 'backend' | 'caps' | 'memory_mib' | 'compute_capability'>[],
): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (!preparesBeforeLease(exp)) return out;
  const want = cardNeed(exp);
  const need = specNeeds(exp.spec);
  const sorted = [...hosts].sort();
  const serving = new Map(
    sorted.map((host) => [
      host,
      cards
        .filter((c) => c.host === host && cardServes(want, c) && allows(c, need))
        .map((c) => c.id)
        .sort(),
    ]),
  );
  let left = exp.plan.blocks.length;
  for (const _round of [0, 1])
    for (const host of sorted) {
      const named = out.get(host) ?? [];
      const ids = serving.get(host)!.slice(0, Math.min(left, MAX_PREPARE_PER_HOST - named.length));
      left -= ids.length;
      out.set(host, [...named, ...ids]);
    }
  return out;
}

/** The experiment's reason when its build phase failed. */
export function buildFailureReason(f: BuildFailure): string {
  return `a build failed on ${f.host} before any card was leased to the experiment: ${f.message}`;
}

/**
 * Hosts whose live cards could hold one of the experiment's gangs, of workers that allow what it
 * runs (jobs/worker-capabilities.ts): a build job goes nowhere the build is not allowed.
 */
export function candidateHosts(
  exp: Pick<ExperimentRecord, 'spec' | 'plan'>,
  cards: readonly Pick<Card, 'host' | 'backend' | 'caps' | 'memory_mib' | 'compute_capability'>[],
): Set<string> {
  const want = cardNeed(exp);
  const need = specNeeds(exp.spec);
  const per = new Map<string, number>();
  for (const c of cards) if (cardServes(want, c) && allows(c, need)) per.set(c.host, (per.get(c.host) ?? 0) + 1);
  const { placement, spreadFallback } = gangPlacement(exp.plan.placement);
  const total = [...per.values()].reduce((a, n) => a + n, 0);
  const spreads =
    placement === 'spread' || (spreadFallback === true && ![...per.values()].some((n) => n >= exp.plan.ranks));
  return new Set([...per].filter(([, n]) => (spreads ? total >= exp.plan.ranks : n >= exp.plan.ranks)).map(([h]) => h));
}

type JobEnd = { ok: true } | { ok: false; unrecoverable: boolean; reason: string };

export class BuildPhase {
  private readonly builds: ExperimentBuildStore;
  private readonly queues = new Map<string, Queue>();
  /**
   * The experiments with a build phase the grant pass asked about this term (`gate`): the head of
   * the queue. Only their builds move along: reading every active experiment on each reconcile
   * cost a record read each and one state read each, every second, with 10 000 queued.
   */
  private readonly experiments = new Map<string, ExperimentRecord>();
  /**
   * Each experiment's build phase as this leader last read or wrote it (it is the only writer):
   * the grant pass's gate reads it here rather than from Redis, so an experiment that builds
   * its checkout — every command workload with a build — costs the pass no round trip.
   */
  private readonly known = new Map<string, ExperimentBuilds>();
  /** hosts with a build in flight that stopped heartbeating, since when */
  private readonly deadSince = new Map<string, number>();
  private term: Term | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private secret: Buffer | undefined;

  constructor(
    private readonly ctx: SchedulerContext,
    /** a host became ready, or a build failed: the grant pass should look again (it releases the failed experiment's waiting processors) */
    private readonly kick: () => void,
    secret?: Buffer,
  ) {
    this.builds = new ExperimentBuildStore(ctx.redis, ctx.prefix);
    this.secret = secret;
  }

  begin(term: Term): void {
    this.term = term;
    this.wake();
  }

  end(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.term = null;
    this.experiments.clear();
    this.known.clear();
    this.deadSince.clear();
  }

  async close(): Promise<void> {
    this.end();
    await Promise.all([...this.queues.values()].map((q) => q.close().catch(() => undefined)));
    this.queues.clear();
  }

  /** For the grant pass: which hosts may take the experiment's blocks now, or why none may ever. */
  async gate(exp: ExperimentRecord): Promise<BuildGate | null> {
    if (!hasBuildPhase(exp)) return null;
    this.experiments.set(exp.id, exp);
    const b = this.known.get(exp.id) ?? (await this.read(exp.id));
    if (b.failed) return { failed: buildFailureReason(b.failed) };
    // nothing dispatched yet (just submitted): start now rather than at the next tick
    if (b.hosts.size === 0) this.wake();
    const ready = new Set([...b.hosts].filter(([, h]) => h.state === 'ready').map(([host]) => host));
    return { hosts: ready, hostsWhy: describeBuilds(b.hosts, preparesBeforeLease(exp)) };
  }

  /** Runs a reconcile pass now (one at a time); the next is scheduled after it. */
  wake(): void {
    const term = this.term;
    if (!term || term.aborted || this.running) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    let building = false;
    this.running = this.reconcile(term)
      .then((b) => {
        building = b;
      })
      .catch((err: unknown) => this.ctx.log.error({ err }, 'scheduler: build phase pass failed'))
      .finally(() => {
        this.running = null;
        if (this.term !== term || term.aborted) return;
        const ms = building ? Math.min(BUILDING_POLL_MS, this.ctx.tuning.safetyPollMs) : this.ctx.tuning.safetyPollMs;
        this.timer = setTimeout(() => this.wake(), ms);
      });
  }

  /** One pass over the experiments with builds the grant pass asked about; true while some build is in flight. */
  private async reconcile(term: Term): Promise<boolean> {
    const { store, registry } = this.ctx;
    const exps = [...this.experiments.values()];
    if (exps.length === 0) return false;
    const states = await store.states(exps.map((e) => e.id));
    let building = false;
    let cards: Card[] | null = null;
    for (const [i, exp] of exps.entries()) {
      if (term.aborted) return false;
      const state = states[i] ?? null;
      if (state !== 'queued' && state !== 'running') {
        // ended or gone: it leaves the cache (a long-running orch serve sees thousands)
        if (state !== 'cancelling') {
          this.experiments.delete(exp.id);
          this.known.delete(exp.id);
        }
        continue;
      }
      // a submission the scheduler refused builds nothing (submit-admission.ts)
      if (this.ctx.refusal(exp) !== null) continue;
      cards ??= await registry.liveCards();
      building = (await this.advance(exp, cards)) || building;
    }
    return building;
  }

  /** The experiment's build phase from Redis, kept as `known`; advance() updates that object as it writes. */
  private async read(id: string): Promise<ExperimentBuilds> {
    const b = await this.builds.read(id);
    if (this.term) this.known.set(id, b);
    return b;
  }

  /** Moves one experiment's build phase along; true while a build of it is in flight. */
  private async advance(exp: ExperimentRecord, cards: Card[]): Promise<boolean> {
    const b = await this.read(exp.id);
    if (b.failed) {
      await this.failBlocks(exp, buildFailureReason(b.failed));
      return false;
    }
    const candidates = candidateHosts(exp, cards);
    const prepare = prepareCards(exp, candidates, cards);
    const alive = new Set(cards.map((c) => c.host));
    const max = this.ctx.tuning.maxAttempts;
    let changed = false;
    let building = false;
    for (const host of new Set([...candidates, ...b.hosts.keys()])) {
      let h = b.hosts.get(host);
      if (h === undefined) {
        if (!candidates.has(host)) continue;
        h = await this.dispatch(exp, host, 1, prepare.get(host) ?? []);
        b.hosts.set(host, h);
        building = true;
        continue;
      }
      if (h.state === 'building') {
        const end = (await this.ended(host, h.job)) ?? this.lost(host, alive);
        if (end === null) {
          building = true;
          continue;
        }
        this.deadSince.delete(host);
        if (end.ok) {
          h = { ...h, state: 'ready', ended: Date.now() };
          this.ctx.log.info({ experiment: exp.id, host, ms: h.ended! - h.since }, 'builds ready on host');
        } else if (end.unrecoverable) {
          await this.fail(exp, {
            code: codeOf({ code: /^([A-Z][A-Z0-9_]+): /.exec(end.reason)?.[1] }),
            message: end.reason,
            host,
            at: Date.now(),
          });
          return false;
        } else {
          this.ctx.log.warn(
            { experiment: exp.id, host, attempt: h.attempt, reason: end.reason },
            'build failed transiently',
          );
          h = { ...h, state: h.attempt < max ? 'retry' : 'given-up', reason: end.reason };
        }
        await this.builds.setHost(exp.id, host, h);
        b.hosts.set(host, h);
        changed = true;
      }
      if (h.state === 'retry' && candidates.has(host)) {
        h = await this.dispatch(exp, host, h.attempt + 1, prepare.get(host) ?? []);
        b.hosts.set(host, h);
        building = true;
      }
    }
    const usable = [...candidates].filter((host) => b.hosts.get(host)?.state !== 'given-up');
    if (candidates.size > 0 && usable.length === 0 && ![...b.hosts.values()].some((h) => h.state === 'ready')) {
      const last = [...b.hosts].find(([, h]) => h.state === 'given-up');
      await this.fail(exp, {
        code: 'BUILD_ATTEMPTS_EXHAUSTED',
        message: `BUILD_ATTEMPTS_EXHAUSTED: every host that could run the experiment failed to build it ${max} times; the last failure: ${last?.[1].reason ?? '?'}`,
        host: last?.[0] ?? '?',
        at: Date.now(),
      });
      return false;
    }
    if (changed) this.kick();
    return building;
  }

  /** A build in flight on a host that stopped heartbeating for lostAfterMs: lost, tried again when the host is back. */
  private lost(host: string, alive: ReadonlySet<string>): JobEnd | null {
    if (alive.has(host)) {
      this.deadSince.delete(host);
      return null;
    }
    const since = this.deadSince.get(host) ?? Date.now();
    this.deadSince.set(host, since);
    if (Date.now() - since < this.ctx.tuning.lostAfterMs) return null;
    return { ok: false, unrecoverable: false, reason: `host ${host} stopped heartbeating while it built` };
  }

  private queue(host: string): Queue {
    let q = this.queues.get(host);
    if (!q) {
      q = new Queue(hostBuildQueue(host), { connection: this.ctx.redis, prefix: this.ctx.prefix });
      this.queues.set(host, q);
    }
    return q;
  }

  private async dispatch(
    exp: ExperimentRecord,
    host: string,
    attempt: number,
    prepare: readonly string[],
  ): Promise<HostBuilds> {
    this.secret ??= requireClusterSecret('the scheduler');
    const job = buildJobId(exp.id, attempt, host);
    // a no-op when the job exists (a new leader dispatching what the last one did)
    const signed = signJob(hostBuildQueue(host), 'build', job, buildJobOf(exp, host, attempt, prepare), this.secret);
    await this.queue(host).add(signed.name, signed.data, signed.opts);
    const h: HostBuilds = { state: 'building', attempt, job, since: Date.now() };
    await this.builds.setHost(exp.id, host, h);
    this.ctx.log.info({ experiment: exp.id, host, attempt }, 'build job dispatched');
    return h;
  }

  /**
   * How the host's build job ended, or null while it runs or waits. A job the host's worker
   * took before it last registered was lost with that worker (killed, restarted): its build
   * died with it (fate-shared), and BullMQ would only notice once the job's lock lapsed.
   */
  private async ended(host: string, jobId: string): Promise<JobEnd | null> {
    const q = this.queue(host);
    const state = await q.getJobState(jobId);
    if (state === 'completed') return { ok: true };
    if (state === 'unknown')
      return {
        ok: false,
        unrecoverable: false,
        reason: `its build job ${jobId} is gone from the queue of host ${host}`,
      };
    if (state !== 'failed' && state !== 'active') return null;
    const [job, info] = await Promise.all([
      Job.fromId(q, jobId),
      state === 'active' ? this.ctx.registry.hostInfo(host) : null,
    ]);
    if (state === 'active') {
      const taken = job?.processedOn;
      const restarted = taken !== undefined && info?.started != null && info.started > taken;
      return restarted
        ? {
            ok: false,
            unrecoverable: false,
            reason: `the worker of host ${host} stopped while it built (it registered again since)`,
          }
        : null;
    }
    const last = job?.stacktrace?.[job.stacktrace.length - 1] ?? '';
    return { ok: false, unrecoverable: last.startsWith('UnrecoverableError'), reason: job?.failedReason ?? 'failed' };
  }

  /**
   * Ends the experiment's waiting blocks with the failure, then records it (the first one
   * stays): the grant pass releases the waiting processors once it reads the failure, and each
   * then finds its block ended failed, never cancelled.
   */
  private async fail(exp: ExperimentRecord, f: BuildFailure): Promise<void> {
    await this.failBlocks(exp, buildFailureReason(f));
    const recorded = await this.builds.fail(exp.id, f);
    // the first failure recorded stays: the gate reads it back rather than assume this one
    this.known.delete(exp.id);
    if (recorded)
      this.ctx.log.warn(
        { experiment: exp.id, host: f.host, code: f.code },
        'build failed: the experiment ends before any card is leased to it',
      );
    this.kick();
  }

  /** Every waiting block ends failed with the build's failure (fail-waiting-blocks.ts). */
  private async failBlocks(exp: ExperimentRecord, reason: string): Promise<void> {
    await failWaitingBlocks(this.ctx, exp, reason);
  }
}

/** Why a block waits on its builds: each host's state, for `orch status` and the block's `why`. */
function describeBuilds(hosts: ReadonlyMap<string, HostBuilds>, prepares: boolean): string {
  // a build job of an experiment that prepares its first ranks ends once their prepare() is done
  const what = prepares
    ? "its builds and its first blocks' prepare() (the host phase, before any lease)"
    : 'its builds';
  if (hosts.size === 0) return `waiting for ${what} (no host has started them yet)`;
  // no running clock in it: the grant pass writes a block's why each time it changes
  const parts = [...hosts].map(([host, h]) =>
    h.state === 'building'
      ? `${prepares ? 'preparing' : 'building'} on ${host} (attempt ${h.attempt})`
      : h.state === 'ready'
        ? `ready on ${host}`
        : `${h.state} on ${host}: ${h.reason ?? ''}`,
  );
  return `waiting for ${what} (${parts.join('; ')})`;
}
