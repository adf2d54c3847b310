/**
 * Card time: how much of the time a block held each of its cards was spent measuring. Read from
 * the committed records only (jobs/rep-result.ts `answers`, jobs/commit-record.ts), never from
 * the event stream: a rep line the stream cut for length counts in full here.
 *
 * Definitions, per committed block attempt and per card (one row each; a gang's ranks are never
 * summed against one lease):
 * - leased: the commit record's `started` (block-start) to `committed`, the committing worker's
 *   clock (ms). It covers the ranks' start, the identity gates, the reps, the guard checks and
 *   the commit; it misses the grant→pickup delay before and the ranks' exit and lease release
 *   after. Every card of a gang is leased together, so each card's row has the block's lease.
 * - step share: Σ over the block's reps of Σ measured `step_ms` of the card's rank / leased.
 *   The share of the card's time that became a number. Warm-up steps are not in it.
 * - busy share: (Σ measured steps + Σ warm-up steps) / leased, the warm-up steps from the rank's
 *   `warmup_ms` and `settle_ms`. Null when a rank's answer lacks `warmup_ms` (an older graphrt).
 * - rep share: Σ over reps of the card's rank's span (`t_end_ns` − `t_start_ns`: capture,
 *   warm-up and measured steps, on the rank's CLOCK_MONOTONIC) / leased.
 * - gap: between two consecutive reps on the card, the next one's start minus the previous one's
 *   end (the rank's clock). With the next request queued behind the rep (the worker's one-deep
 *   pipeline, worker/block-executor.ts) it is the rank's alone; sent one at a time it also holds
 *   the worker's turnaround. p50 and p99 over the card's gaps.
 * - start-up, the commit record's clock: ranks ready = `ready` − `started` (the worker's look
 *   for foreign processes, process start, backend and context); gates = `gated` − `ready`;
 *   start-up = their sum, the card time before the first rep could start. Per rank, the commit
 *   record's `ranks` split it by where it was paid: host phase (overlapped), in the lease: CUDA
 *   init and process start, setup (startup-split.ts), with the caches warm or cold.
 * Rank timestamps are bounded (`set_aside`): a span that ends before it starts, one longer than the
 * lease, one that starts before the previous rep on the card ended, or (a rank on the committing
 * host, whose worker's clock the lease is on) one whose answer falls outside the lease is set aside
 * with its reason and counts in neither rep share nor gaps. An answer without a span (an older
 * graphrt, a per-rep command) leaves rep share and gaps null; step share needs only step_ms.
 * A record without `started` (an older one) gives no row.
 */
import type { CommitRecord } from '../../jobs/commit-record.ts';
import { type RankAnswer, rankSpan, warmupSteps } from '../../jobs/gang-rep.ts';
import type { RepResult } from '../../jobs/rep-result.ts';
import { median } from './descriptive.ts';
import { type StartupSplit, startupSplit } from './startup-split.ts';

export interface BusyShareRow {
  block: number;
  attempt: number;
  card: string;
  host: string;
  rank: number;
  reps: number;
  leased_ms: number;
  step_ms: number;
  /** Σ warm-up steps (null: a rank answer without warmup_ms) */
  warmup_ms: number | null;
  rep_ms: number | null;
  /** measured steps / leased */
  step_share: number;
  /** (warm-up + measured steps) / leased */
  busy_share: number | null;
  rep_share: number | null;
  /** block-start → every rank's hello (the commit record's clock) */
  ready_ms: number | null;
  /** every hello → every gate done (0 without gates) */
  gates_ms: number | null;
  /** ranks ready + gates */
  startup_ms: number | null;
  gap_p50_ms: number | null;
  gap_p99_ms: number | null;
  /** how the card's rank started, split by where it was paid (startup-split.ts); null: the record does not say */
  rank_start: StartupSplit | null;
  /** rank timestamps set aside, each with its reason */
  set_aside: string[];
}

/** Nearest-rank quantile (q in [0, 1]) of a non-empty sample. */
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] as number;
}

const sum = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0);

/** A rank's answer and the rep it belongs to. */
interface CardRep {
  position: number;
  label: string;
  answer: RankAnswer;
}

/** The clock granularity between a worker's ms and a rank's ns when an answer is checked against the lease. */
const LEASE_SLACK_MS = 2;

/** One row per (committed block attempt, card), by block then rank. */
export function busyShare(reps: Iterable<RepResult>, commits: Readonly<Record<string, CommitRecord>>): BusyShareRow[] {
  const byCard = new Map<string, { block: number; commit: CommitRecord; list: CardRep[] }>();
  for (const r of reps) {
    const commit = commits[String(r.block)];
    if (
      commit === undefined ||
      commit.attempt !== r.attempt ||
      commit.started === undefined ||
      commit.committed === undefined
    )
      continue;
    for (const a of r.answers ?? []) {
      const key = `${r.block}\u0000${a.card}`;
      let card = byCard.get(key);
      if (!card) {
        card = { block: r.block, commit, list: [] };
        byCard.set(key, card);
      }
      card.list.push({
        position: r.position,
        label: `rep ${r.arm} #${r.rep} (block ${r.block}, position ${r.position})`,
        answer: a,
      });
    }
  }
  const rows: BusyShareRow[] = [];
  for (const { block, commit, list } of byCard.values())
    rows.push(
      cardRow(
        block,
        commit,
        list.sort((x, y) => x.answer.answered_ms - y.answer.answered_ms || x.position - y.position),
        list[0]!.answer,
      ),
    );
  return rows.sort((a, b) => a.block - b.block || a.rank - b.rank || a.card.localeCompare(b.card));
}

function cardRow(block: number, commit: CommitRecord, list: CardRep[], first: RankAnswer): BusyShareRow {
  const started = commit.started!;
  const leased = Math.max(commit.committed! - started, 0);
  let stepSum = 0;
  let warmSum: number | null = 0;
  let timed = true;
  const spans: { start: number; end: number }[] = [];
  const setAside: string[] = [];
  let previousEnd = -Infinity;
  for (const { label, answer } of list) {
    const l = answer.line;
    stepSum += sum(l.step_ms);
    const w = warmupSteps(l);
    warmSum = warmSum === null || w === null ? null : warmSum + sum(w);
    const span = rankSpan(l);
    if (span === null) {
      timed = false;
      continue;
    }
    const why = impossible(span, answer, previousEnd, leased, commit);
    if (why !== null) {
      setAside.push(`${label} on card ${answer.card} (rank ${answer.rank}): ${why}`);
      continue;
    }
    spans.push(span);
    previousEnd = span.end;
  }
  const repMs = timed ? spans.reduce((s, x) => s + (x.end - x.start) / 1e6, 0) : null;
  const gaps = timed ? spans.slice(1).map((x, i) => (x.start - spans[i]!.end) / 1e6) : [];
  const ready = commit.ready === undefined ? null : Math.max(commit.ready - started, 0);
  const gatesMs =
    commit.ready === undefined || commit.gated === undefined ? null : Math.max(commit.gated - commit.ready, 0);
  return {
    block,
    attempt: commit.attempt,
    card: first.card,
    host: first.host,
    rank: first.rank,
    reps: list.length,
    leased_ms: leased,
    step_ms: stepSum,
    warmup_ms: warmSum,
    rep_ms: repMs,
    step_share: leased > 0 ? stepSum / leased : 0,
    busy_share: warmSum === null ? null : leased > 0 ? (stepSum + warmSum) / leased : 0,
    rep_share: repMs === null ? null : leased > 0 ? repMs / leased : 0,
    ready_ms: ready,
    gates_ms: gatesMs,
    startup_ms: ready === null || gatesMs === null ? null : ready + gatesMs,
    gap_p50_ms: gaps.length > 0 ? median(gaps) : null,
    gap_p99_ms: gaps.length > 0 ? quantile(gaps, 0.99) : null,
    rank_start: rankStartOf(commit, first.card),
    set_aside: setAside,
  };
}

/** The card's rank's start in the committed record (the committing part's ranks only), split. */
function rankStartOf(commit: CommitRecord, card: string): StartupSplit | null {
  const s = commit.startup?.find((r) => r.card === card);
  return s === undefined ? null : startupSplit(s);
}

/** Why a rank's span cannot be (monotonic within the rep, on the card, within the lease), or null. */
function impossible(
  span: { start: number; end: number },
  a: RankAnswer,
  previousEnd: number,
  leasedMs: number,
  commit: CommitRecord,
): string | null {
  const ms = (span.end - span.start) / 1e6;
  if (ms < 0) return `t_end_ns ${span.end} is before t_start_ns ${span.start}`;
  if (ms > leasedMs + LEASE_SLACK_MS)
    return `its span of ${ms.toFixed(3)} ms is longer than the block's lease of ${leasedMs} ms`;
  if (span.start < previousEnd)
    return `it starts ${((previousEnd - span.start) / 1e6).toFixed(3)} ms before the previous rep on this card ended`;
  if (
    a.host === commit.host &&
    (a.answered_ms - ms < commit.started! - LEASE_SLACK_MS || a.answered_ms > commit.committed! + LEASE_SLACK_MS)
  ) {
    return `its span (${ms.toFixed(3)} ms, answered at ${a.answered_ms}) falls outside the lease ${commit.started}..${commit.committed}`;
  }
  return null;
}
