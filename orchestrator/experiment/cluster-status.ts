/**
 * What `orch status` shows: the scheduler leader, the queues, every card with its host's
 * liveness and who holds it, and the experiments with their blocks — for a waiting block the
 * reason the scheduler wrote at its last grant pass (or, with no leader, what it would be).
 * The experiments are a page (`limit`, oldest first) with the count of every state: with 10 000
 * queued, reading and printing every one took 3.8 s and 4.5 MB.
 */

import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { describeOffer } from '../../jobs/card-requirements.ts';
import { gangPlacement, plannedReps } from '../../jobs/plan.ts';
import { escapeRankText } from '../../jobs/rank-text.ts';
import { differsFrom, formatWorkerVersion } from '../../jobs/worker-version.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import {
  type BlockState,
  type ExperimentState,
  ExperimentStore,
  TERMINAL_EXPERIMENT_STATES,
} from '../../store/experiment-store.ts';
import { hostQueue } from '../../store/keys.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { cardNeed, cardSlot, neverFits } from '../scheduler/grant-planner.ts';
import { LeaderLease } from '../scheduler/leader-lease.ts';
import { type ExperimentFilter, selectExperiments } from './experiment-filter.ts';
import { type ExperimentOutcome, experimentOutcomes, formatChange, formatDuration } from './experiment-outcome.ts';
import { uncommittedRepsOf } from './progress.ts';

export interface CardStatus {
  id: string;
  host: string;
  backend: string;
  /** what its worker read from nvidia-smi (jobs/card.ts): a spec's workload.requires is held to it; null on cpu cards and where not reported */
  memory_mib: number | null;
  compute_capability: string | null;
  alive: boolean;
  /** what its host's worker registered (orch, commit, graphrt); null: none (an older worker) */
  version: string | null;
  /** the host's orch (version, commit) is not the one reading the status */
  version_differs: boolean;
  holder: { experiment: string; block: number; epoch: number; owner: string; expires_in_ms: number } | null;
}

export interface ExperimentStatus {
  id: string;
  name: string;
  state: string;
  reason: string | null;
  created: string;
  blocks: (Pick<BlockState, 'block' | 'phase' | 'attempt' | 'why' | 'reason'> & { cards: string[] })[];
  measured: number;
  /** reps the running attempts measured, from the live stream: not committed yet (0 when none runs) */
  uncommitted: number;
  planned: number;
  /** what it came to once it ended (verdict, change, CI, duration); null while it runs, or when not asked for */
  outcome: ExperimentOutcome | null;
}

export interface ClusterStatus {
  leader: string | null;
  /** the orch that read this status, which the hosts' versions are compared with */
  reader: string | null;
  queues: Record<string, Record<string, number>>;
  cards: CardStatus[];
  /** the page of experiments shown (at most `limit`) */
  experiments: ExperimentStatus[];
  /** every experiment `experiments` was paged from (all, or those not ended over an hour ago), by state */
  counts: Record<string, number>;
  /** how many of them (that match the filter) `experiments` leaves out */
  not_shown: number;
}

/** Experiments shown by default: a page, not the whole queue. */
export const DEFAULT_STATUS_LIMIT = 20;

export async function clusterStatus(
  redis: Redis,
  prefix: string,
  opts: {
    experiment?: string;
    all?: boolean;
    /** experiments shown (default DEFAULT_STATUS_LIMIT) */
    limit?: number;
    /** this orch's version, to flag hosts that run another */
    own?: { version: string; commit: string };
    /** only experiments that match (state, outcome, name) */
    filter?: ExperimentFilter;
    /** the ended experiments' outcomes (experiment-outcome.ts: analysed once, then kept) */
    outcomes?: boolean;
  } = {},
): Promise<ClusterStatus> {
  const registry = new CardRegistry(redis, { prefix });
  const leases = new LeaseStore(redis, { prefix });
  const store = new ExperimentStore(redis, prefix);
  const all = (await registry.all()).sort((a, b) => a.host.localeCompare(b.host) || a.index - b.index);
  const live = new Set((await registry.liveCards()).map((c) => c.id));
  const held = new Map((await leases.held(all.map((c) => c.id))).map((l) => [l.card, l]));
  const now = Date.now();
  const cards: CardStatus[] = all.map((c) => {
    const l = held.get(c.id);
    return {
      id: c.id,
      host: c.host,
      backend: c.backend,
      memory_mib: c.memory_mib ?? null,
      compute_capability: c.compute_capability ?? null,
      alive: live.has(c.id),
      version: c.version ?? null,
      version_differs: opts.own !== undefined && differsFrom(c.version, opts.own),
      holder: l
        ? { experiment: l.experiment, block: l.block, epoch: l.epoch, owner: l.owner, expires_in_ms: l.expires - now }
        : null,
    };
  });

  const queues: Record<string, Record<string, number>> = {};
  const names = [...new Set(all.map((c) => c.host))].map(hostQueue);
  for (const name of names) {
    const q = new Queue(name, { connection: redis, prefix });
    try {
      queues[name] = await q.getJobCounts(
        'waiting',
        'active',
        'waiting-children',
        'completed',
        'failed',
        'delayed',
        'prioritized',
      );
    } finally {
      await q.close();
    }
  }

  const ids = opts.experiment ? [opts.experiment] : await store.list();
  const liveSlots = (await registry.liveCards()).map(cardSlot);
  const page = await pageOf(store, ids, {
    all: opts.all === true || opts.experiment !== undefined,
    now,
    ...(opts.filter?.state ? { state: opts.filter.state } : {}),
  });
  const limit = opts.limit ?? DEFAULT_STATUS_LIMIT;
  const chosen = await selectExperiments(redis, prefix, page.ids, opts.filter ?? {}, { limit, countAll: true });
  const outcomes = opts.outcomes ? await experimentOutcomes(redis, prefix, chosen.exps) : chosen.exps.map(() => null);
  const read = await Promise.all(
    chosen.exps.map(async (exp, i) => {
      const blocks = await store.blocks(exp.id);
      // Only while a block runs: the committed count alone reads 0 until its block ends.
      const uncommitted = await uncommittedRepsOf(redis, prefix, exp, blocks);
      return {
        exp,
        outcome: outcomes[i]!,
        blocks,
        measured: await redis.hlen(store.keys.results(exp.id)),
        uncommitted,
      };
    }),
  );
  const experiments: ExperimentStatus[] = [];
  for (const { exp, outcome, blocks, measured, uncommitted } of read) {
    // Without a leader nobody writes `why`; say what the cards allow.
    const fallbackWhy = neverFits(
      {
        key: '',
        ranks: exp.plan.ranks,
        ...cardNeed(exp),
        ...gangPlacement(exp.plan.placement),
        expectedMs: 0,
      },
      liveSlots,
    );
    experiments.push({
      id: exp.id,
      name: exp.name,
      state: exp.state,
      reason: exp.reason,
      created: new Date(exp.created).toISOString(),
      blocks: blocks.map((b) => ({
        block: b.block,
        phase: b.phase,
        attempt: b.attempt,
        why:
          b.phase === 'waiting' ? (b.why ?? fallbackWhy ?? 'queued (no grant pass yet: is orch serve running?)') : null,
        reason: b.reason,
        cards: b.gang.flatMap((p) => p.cards),
      })),
      measured,
      uncommitted,
      planned: plannedReps(exp.plan),
      outcome,
    });
  }
  const reader = opts.own
    ? formatWorkerVersion({ orch: opts.own.version, commit: opts.own.commit, graphrt: '' }).replace(/ graphrt $/, '')
    : null;
  return {
    leader: await LeaderLease.holder(redis, prefix),
    reader,
    queues,
    cards,
    experiments,
    counts: page.counts,
    not_shown: Math.max(0, chosen.matched - experiments.length),
  };
}

/** Ended this long ago, an experiment is left out unless `all`. */
const ENDED_SHOWN_MS = 3_600_000;

/**
 * Which experiments of `ids` (oldest first) a status may show: every state in one script, the end
 * time of the ended ones in one more, then those not ended over an hour ago (or all), of `state`
 * when given. Two commands for any number of experiments; the counts are of every state.
 */
async function pageOf(
  store: ExperimentStore,
  ids: string[],
  o: { all: boolean; now: number; state?: ExperimentState },
): Promise<{ ids: string[]; counts: Record<string, number> }> {
  const states = await store.states(ids);
  const ended = ids.filter((_, i) => TERMINAL_EXPERIMENT_STATES.has(states[i] as ExperimentState));
  const endedAt =
    o.all || ended.length === 0
      ? []
      : await store.redis.pipeline(ended.map((id) => ['hget', store.keys.exp(id), 'ended'])).exec();
  const old = new Set(
    ended.filter((_, i) => {
      const at = Number(endedAt?.[i]?.[1] ?? 0);
      return !o.all && at > 0 && o.now - at > ENDED_SHOWN_MS;
    }),
  );
  const counts: Record<string, number> = {};
  const listed: string[] = [];
  ids.forEach((id, i) => {
    const state = states[i];
    if (!state || old.has(id)) return;
    counts[state] = (counts[state] ?? 0) + 1;
    if (!o.state || state === o.state) listed.push(id);
  });
  return { ids: listed, counts };
}

/**
 * The status as text for a terminal. Every string in it was read from Redis (a card's id, host and
 * version, the leader, a lease's experiment, a block's `why` and reason), which anyone who reaches
 * it may have written: each is escaped (jobs/rank-text.ts) as it is put in a line.
 */
export function renderStatus(s: ClusterStatus): string {
  const esc = escapeRankText;
  const lines: string[] = [];
  lines.push(`scheduler leader: ${s.leader === null ? 'none (start orch serve)' : esc(s.leader)}`);
  lines.push('', 'queues');
  for (const [name, c] of Object.entries(s.queues)) {
    const parts = Object.entries(c)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`);
    lines.push(`  ${esc(name).padEnd(16)} ${parts.join(', ') || 'empty'}`);
  }
  // a host of another orch than this one: told once per host, before its cards
  const differing = new Map(s.cards.filter((c) => c.version_differs).map((c) => [c.host, c.version] as const));
  for (const [host, version] of differing) {
    lines.push(
      `host ${esc(host)} runs ${version === null ? 'an unknown version (an older worker)' : esc(version)}, not ${s.reader ?? 'this orch'}: its cards never join a gang with other versions; update its checkout and restart its worker (orch hosts down/up)`,
    );
  }
  lines.push('', 'cards');
  if (s.cards.length === 0) lines.push('  none registered (start orch worker on a host)');
  for (const c of s.cards) {
    const who = c.holder
      ? `held by ${esc(c.holder.experiment)} block ${c.holder.block} (epoch ${c.holder.epoch}, expires in ${Math.max(0, Math.round(c.holder.expires_in_ms / 100) / 10)} s)`
      : 'free';
    const version = c.version_differs ? `  version ${c.version === null ? 'unknown' : esc(c.version)} DIFFERS` : '';
    // a cuda card's memory and capability, what a spec's workload.requires is checked against
    const offer = c.backend === 'cuda' ? describeOffer({ backend: 'cuda', ...reported(c) }) : '';
    lines.push(
      `  ${esc(c.id).padEnd(20)} ${esc(c.host).padEnd(12)} ${c.backend.padEnd(5)} ${c.alive ? 'alive' : 'DEAD '}  ${who}${version}${offer}`,
    );
  }
  const counts = Object.entries(s.counts)
    .map(([state, n]) => `${state} ${n}`)
    .join(', ');
  lines.push('', `experiments${counts ? ` (${counts})` : ''}`);
  if (s.experiments.length === 0) lines.push('  none');
  for (const e of s.experiments) {
    lines.push(
      `  ${esc(e.id)}  ${e.state}  ${e.measured}/${e.planned} reps measured${e.uncommitted > 0 ? ` (+${e.uncommitted} in running blocks, not yet committed)` : ''}${e.outcome ? `  ${outcomeText(e.outcome)}` : ''}${e.reason ? `  (${esc(e.reason)})` : ''}`,
    );
    for (const b of e.blocks) {
      const detail =
        b.phase === 'waiting'
          ? `waiting: ${esc(b.why ?? '')}`
          : b.phase === 'running'
            ? `running attempt ${b.attempt} on ${b.cards.map((c) => esc(c)).join(', ')}`
            : `${b.phase}${b.reason ? `: ${esc(b.reason)}` : ''}`;
      lines.push(`    block ${b.block}  ${detail}`);
    }
  }
  if (s.not_shown > 0) lines.push(`  … ${s.not_shown} more not shown (orch status --limit N, or orch status ID)`);
  return `${lines.join('\n')}\n`;
}

/** "slower +5.02 % (CI +4.10 % – +5.90 %) in 4 min 12 s", or the outcome and duration without a change. */
function outcomeText(o: ExperimentOutcome): string {
  const { change, ci } = formatChange(o);
  return `${o.outcome}${o.change === null ? '' : ` ${change} (CI ${ci})`} in ${formatDuration(o.duration_ms)}`;
}

/** A card status's memory and capability as jobs/card-requirements.ts reads them (absent, not null, where unreported). */
function reported(c: Pick<CardStatus, 'memory_mib' | 'compute_capability'>): {
  memory_mib?: number;
  compute_capability?: string;
} {
  return {
    ...(c.memory_mib === null ? {} : { memory_mib: c.memory_mib }),
    ...(c.compute_capability === null ? {} : { compute_capability: c.compute_capability }),
  };
}
