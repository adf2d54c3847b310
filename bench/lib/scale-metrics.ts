/**
 * What a scheduler-at-scale run measured, from the block states the scheduler wrote and the
 * host-job records of the stand-in hosts. Pure.
 *
 * - grants/s: grants per 1 s window from the first grant to the last (the queue is non-empty
 *   until the last grant: every block was submitted before it).
 * - card utilisation: leased card-seconds (grant → release of each attempt) over available
 *   card-seconds from the first submission to the last grant (work was waiting all along); busy:
 *   the same from the host's receipt of its job, so the difference is the dispatch lag. Steady:
 *   the same from the moment every card has had its first grant to the moment fewer than
 *   STEADY_WAITING blocks remain ungranted, without the start (submissions, first grants) and
 *   the drain (the last blocks, often whole-host gangs that leave other cards nothing to take).
 * - head wait of a block: from when it became the oldest waiting block (every block ahead of it
 *   in queue order granted, and itself submitted) to its grant. Backfill guarantees it starts by
 *   its reservation, which is no later than the latest expected end (granted_at + expected_ms) of
 *   the attempts running at that moment — blocks here run shorter than expected, so that is a
 *   bound; the scheduler's own pass latency comes on top (`slackMs`).
 * - exclusivity: no card held by two host jobs at once (their receive → release-start intervals
 *   overlap on a card).
 */
import { compareQueued } from '../../orchestrator/scheduler/grant-planner.ts';
import type { HostJobRecord } from './stand-in-host.ts';

export interface BlockTimeline {
  experiment: string;
  block: number;
  seq: number;
  priority: number;
  ranks: number;
  /** the experiment was registered (ms) */
  created: number;
  granted_at: number;
  expected_ms: number;
  attempts: number;
}

export interface HeadWait {
  key: string;
  ranks: number;
  head_at: number;
  wait_ms: number;
  bound_ms: number;
}

/** The drain begins when fewer blocks than this remain to be granted (see `steady`). */
export const STEADY_WAITING = 64;

export interface ScaleMetrics {
  blocks: number;
  grants_per_s_median: number;
  grants_per_s_overall: number;
  utilisation: number;
  /** leased over available card-time between the start and the drain (see the file comment) */
  steady: number;
  /** how long that window was, ms */
  steadyMs: number;
  /** the same over the time the hosts held the block (job received → release): leased minus dispatch lag */
  busy: number;
  /** the longest head wait among 8-rank blocks (the largest gangs starve first) and its bound */
  worst8: HeadWait | null;
  /** blocks (any size) whose head wait exceeded bound + slack */
  starved: HeadWait[];
  /** pairs of host jobs that held one card at once */
  overlaps: string[];
  retried: number;
  /** where a card's time goes between two leases and within one, per card and lease (see cardGaps) */
  gaps: CardGaps;
}

/**
 * A card's cycle from one lease to the next, medians and means over every card and every pair
 * of consecutive leases on it, ms: `idle` is release → the next grant on the card (the only part
 * utilisation counts as idle), then the next lease's grant → host job received (dispatch),
 * received → started (the grant checked, the first renew), started → ran (the block's own run:
 * the stand-in's sleep), ran → released (commit and release). `running` is the share of the
 * card-time that was that run (stricter than utilisation, which counts the whole lease).
 */
export interface CardGaps {
  /** from the first submission to the card's first grant (the start: submissions, block jobs delivered) */
  first: Stat;
  idle: Stat;
  dispatch: Stat;
  start: Stat;
  run: Stat;
  end: Stat;
  running: number;
}

export interface Stat {
  median: number;
  mean: number;
}

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

export function scaleMetrics(
  blocks: BlockTimeline[],
  jobs: HostJobRecord[],
  cards: number,
  slackMs: number,
): ScaleMetrics {
  const grants = blocks.map((b) => b.granted_at).sort((a, b) => a - b);
  const first = grants[0] ?? 0;
  const last = grants[grants.length - 1] ?? 0;
  const windows: number[] = [];
  for (let t = first; t + 1000 <= last || windows.length === 0; t += 1000)
    windows.push(grants.filter((g) => g >= t && g < t + 1000).length);
  const t0 = Math.min(...blocks.map((b) => b.created));

  const grantedAt = new Map(blocks.map((b) => [`${b.experiment}.b${b.block}`, b.granted_at]));
  let leased = 0;
  let busy = 0;
  for (const j of jobs) {
    const [from, to] = [Math.max(t0, j.received), Math.min(last, j.releasing)];
    if (to > from) busy += (to - from) * j.cards.length;
  }
  for (const j of jobs) {
    const from = Math.max(t0, grantedAt.get(`${j.experiment}.b${j.block}`) ?? j.received);
    const to = Math.min(last, j.released);
    if (to > from) leased += (to - from) * j.cards.length;
  }

  // steady: from every card's first grant to fewer than STEADY_WAITING blocks left to grant
  const firstOnCard = new Map<string, number>();
  for (const j of jobs) {
    const g = grantedAt.get(`${j.experiment}.b${j.block}`) ?? j.received;
    for (const c of j.cards) firstOnCard.set(c, Math.min(firstOnCard.get(c) ?? Infinity, g));
  }
  const s0 = firstOnCard.size === cards ? Math.max(...firstOnCard.values()) : NaN;
  const s1 = grants[Math.max(0, grants.length - STEADY_WAITING)] ?? NaN;
  let steadyLeased = 0;
  for (const j of jobs) {
    const from = Math.max(s0, grantedAt.get(`${j.experiment}.b${j.block}`) ?? j.received);
    const to = Math.min(s1, j.released);
    if (to > from) steadyLeased += (to - from) * j.cards.length;
  }

  const queue = [...blocks].sort((a, b) => compareQueued(a, b));
  const ended = new Map<string, number>();
  for (const j of jobs)
    ended.set(`${j.experiment}.b${j.block}`, Math.max(ended.get(`${j.experiment}.b${j.block}`) ?? 0, j.released));
  const waits: HeadWait[] = [];
  let aheadGranted = 0;
  for (const b of queue) {
    const headAt = Math.max(b.created, aheadGranted);
    let latestEnd = headAt;
    for (const g of blocks) {
      const end = ended.get(`${g.experiment}.b${g.block}`) ?? Infinity;
      if (g.granted_at <= headAt && end > headAt) latestEnd = Math.max(latestEnd, g.granted_at + g.expected_ms);
    }
    waits.push({
      key: `${b.experiment}.b${b.block}`,
      ranks: b.ranks,
      head_at: headAt,
      wait_ms: Math.max(0, b.granted_at - headAt),
      bound_ms: latestEnd - headAt,
    });
    aheadGranted = Math.max(aheadGranted, b.granted_at);
  }
  const eights = waits.filter((w) => w.ranks === 8).sort((a, b) => b.wait_ms - a.wait_ms);

  return {
    blocks: blocks.length,
    grants_per_s_median: median(windows),
    grants_per_s_overall: last > first ? (grants.length - 1) / ((last - first) / 1000) : NaN,
    utilisation: last > t0 ? leased / (cards * (last - t0)) : NaN,
    busy: last > t0 ? busy / (cards * (last - t0)) : NaN,
    steady: s1 > s0 ? steadyLeased / (cards * (s1 - s0)) : NaN,
    steadyMs: s1 > s0 ? s1 - s0 : NaN,
    worst8: eights[0] ?? null,
    starved: waits.filter((w) => w.wait_ms > w.bound_ms + slackMs),
    overlaps: overlaps(jobs),
    retried: blocks.filter((b) => b.attempts > 1).length,
    gaps: cardGaps(jobs, grantedAt, cards, t0, last),
  };
}

function stat(xs: number[]): Stat {
  return { median: median(xs), mean: xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length };
}

function cardGaps(
  jobs: HostJobRecord[],
  grantedAt: Map<string, number>,
  cards: number,
  t0: number,
  last: number,
): CardGaps {
  const granted = (j: HostJobRecord) => grantedAt.get(`${j.experiment}.b${j.block}`) ?? j.received;
  const done = jobs.filter((j) => j.started > 0 && j.ran > 0 && j.released > 0);
  const idle: number[] = [];
  const byCard = new Map<string, HostJobRecord[]>();
  for (const j of done) for (const c of j.cards) byCard.set(c, [...(byCard.get(c) ?? []), j]);
  const first: number[] = [];
  for (const js of byCard.values()) {
    const s = [...js].sort((a, b) => granted(a) - granted(b));
    first.push(granted(s[0] as HostJobRecord) - t0);
    for (let i = 1; i < s.length; i++) idle.push(granted(s[i] as HostJobRecord) - (s[i - 1] as HostJobRecord).released);
  }
  // per card-lease: a gang's lag is every one of its cards' lag
  const perCard = (f: (j: HostJobRecord) => number) => done.flatMap((j) => j.cards.map(() => f(j)));
  let running = 0;
  for (const j of done) {
    const [from, to] = [Math.max(t0, j.started), Math.min(last, j.ran)];
    if (to > from) running += (to - from) * j.cards.length;
  }
  return {
    first: stat(first),
    idle: stat(idle),
    dispatch: stat(perCard((j) => j.received - granted(j))),
    start: stat(perCard((j) => j.started - j.received)),
    run: stat(perCard((j) => j.ran - j.started)),
    end: stat(perCard((j) => j.released - j.ran)),
    running: last > t0 ? running / (cards * (last - t0)) : NaN,
  };
}

function overlaps(jobs: HostJobRecord[]): string[] {
  const byCard = new Map<string, HostJobRecord[]>();
  for (const j of jobs) for (const c of j.cards) byCard.set(c, [...(byCard.get(c) ?? []), j]);
  const out: string[] = [];
  for (const [card, js] of byCard) {
    const s = [...js].sort((a, b) => a.received - b.received);
    for (let i = 1; i < s.length; i++) {
      const a = s[i - 1] as HostJobRecord;
      const b = s[i] as HostJobRecord;
      if (b.received < a.releasing)
        out.push(`${card}: ${a.experiment}.b${a.block}-a${a.attempt} and ${b.experiment}.b${b.block}-a${b.attempt}`);
    }
  }
  return out;
}
