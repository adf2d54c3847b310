/**
 * Card time's start-up of one rank, split by where it was paid (from the committed record's
 * `ranks`, jobs/rank-startup.ts; never from the event stream):
 * - host phase: prepare() of a rank adopted from the host phase, run before the lease while the
 *   card served the block before: overlapped, not charged to the card — less what the rank waited
 *   for it inside its lease (a prepare() longer than the block before), which is charged;
 * - in the lease: block-start to the rank's hello, charged to the card, split into
 *   prepare() when it ran in the lease (no host phase) or was waited for there, setup(), and the
 *   rest: the process's start
 *   and its CUDA (device) initialisation, with the worker's look for foreign processes — what the
 *   program's own clocks do not cover.
 * A rank that said none of it (graphrt, an older record) has only its in-lease total.
 */
import type { RankStartup } from '../../jobs/rank-startup.ts';

export interface StartupSplit {
  rank: number;
  /** block-start → hello (charged to the card) */
  in_lease_ms: number;
  /** prepare() before the lease (overlapped, not charged); null: no host phase */
  host_phase_ms: number | null;
  /** prepare() inside the lease (ran there, or waited for there); null: none, or the rank did not say */
  prepare_in_lease_ms: number | null;
  setup_ms: number | null;
  /** in the lease less prepare() and setup(): process start and CUDA init; null when the rank did not time setup() */
  cuda_init_ms: number | null;
  /** the host phase, or why not (null: the rank said nothing of it) */
  started: 'host phase' | 'in the lease' | null;
  why: string | null;
  caches: 'warm' | 'cold' | null;
}

export function startupSplit(s: RankStartup): StartupSplit {
  const hostPhase = s.host_phase === true;
  const waited = hostPhase && s.prepare_waited_ms !== undefined && s.prepare_waited_ms > 0 ? s.prepare_waited_ms : null;
  const prepareInLease = hostPhase ? waited : (s.prepare_ms ?? null);
  const setup = s.setup_ms ?? null;
  return {
    rank: s.rank,
    in_lease_ms: s.hello_ms,
    host_phase_ms: hostPhase ? Math.max((s.prepare_ms ?? 0) - (waited ?? 0), 0) : null,
    prepare_in_lease_ms: prepareInLease,
    setup_ms: setup,
    cuda_init_ms: setup === null ? null : Math.max(s.hello_ms - setup - (prepareInLease ?? 0), 0),
    started: s.host_phase === undefined ? null : hostPhase ? 'host phase' : 'in the lease',
    why: s.why ?? null,
    caches: s.caches ?? null,
  };
}
