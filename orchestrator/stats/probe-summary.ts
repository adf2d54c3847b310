/**
 * The probe section of `design: probe` (native/PROTOCOL.md "Workloads", probe): from the
 * committed probe records, per rep and rank what the five self-checks measured — the launch
 * counter against the chain's kernels, graph nodes against counted launches, the pinned train
 * step's L, P and win, the capture's instantiate time — and every capture error classified.
 * Pure: records in, summary out.
 */
import { GRAPHRT_PROBES } from '../../jobs/graphrt-protocol.ts';
import type { ProbeOutcome, ProbeRecord } from '../../jobs/probe-record.ts';

/** Why a capture did not do what the probe expected; `expected-refusal` is the probe passing. */
export type CaptureErrorClass = 'expected-refusal' | 'accepted-not-refused' | 'other-refusal' | 'probe-error';

export interface CaptureError {
  class: CaptureErrorClass;
  /** the probe and the check within it (`recapture_refusals/capture_over_live_graph`) */
  where: string;
  /** what graphrt said: the refusal's name, `accepted`, or the error message */
  said: string;
  /** how many (rep, rank) pairs said it */
  count: number;
}

export interface ProbeRow {
  block: number;
  rep: number;
  rank: number;
  card: string;
  device: string;
  /** every probe of this rank passed */
  pass: boolean;
  failed: string[];
  /** launch_counter: kernels of a chain step, as the counter counted them and as expected */
  launches_counted: number | null;
  launches_expected: number | null;
  /** launch_counter: launches counted while the graph replayed (0: a replay is no launch) */
  launches_during_replays: number | null;
  graph_nodes: number | null;
  /** pinned_exact: the pinned train step's launches, pin copies, and whether P < L - 1 */
  L: number | null;
  P: number | null;
  win: boolean | null;
  instantiate_ms: number | null;
  dispatches_per_replay: number | null;
}

export interface ProbeSummary {
  planned: number;
  /** (rep, rank) pairs reported */
  rows: ProbeRow[];
  /** per probe: the (rep, rank) pairs that passed, of those reported */
  by_probe: { name: string; passed: number; of: number }[];
  capture_errors: CaptureError[];
  /** planned probe reps without a committed record */
  missing: number;
  pass: boolean;
  message: string;
}

const REFUSALS: Record<string, string> = {
  capture_over_live_graph: 'RECAPTURE_OVER_LIVE_GRAPH',
  capture_without_prepare: 'CAPTURE_WITHOUT_PREPARE',
};

function numberIn(p: ProbeOutcome | undefined, key: string): number | null {
  const v = p?.detail[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function captureErrorsOf(probes: ProbeOutcome[]): Omit<CaptureError, 'count'>[] {
  const out: Omit<CaptureError, 'count'>[] = [];
  for (const p of probes) {
    const err = p.detail.error;
    if (typeof err === 'string') out.push({ class: 'probe-error', where: p.name, said: err });
    if (p.name !== 'recapture_refusals') continue;
    for (const [check, expected] of Object.entries(REFUSALS)) {
      const said = p.detail[check];
      if (typeof said !== 'string') continue;
      const cls: CaptureErrorClass =
        said === expected ? 'expected-refusal' : said === 'accepted' ? 'accepted-not-refused' : 'other-refusal';
      out.push({ class: cls, where: `${p.name}/${check}`, said });
    }
  }
  return out;
}

export function summarizeProbes(planned: number, records: readonly ProbeRecord[]): ProbeSummary {
  const rows: ProbeRow[] = [];
  const errors = new Map<string, CaptureError>();
  const sorted = [...records].sort((a, b) => a.block - b.block || a.position - b.position);
  for (const r of sorted) {
    for (const rank of r.ranks) {
      const by = new Map(rank.probes.map((p) => [p.name, p]));
      const lc = by.get('launch_counter');
      const pe = by.get('pinned_exact');
      const win = pe?.detail.win;
      const failed = GRAPHRT_PROBES.filter((n) => by.get(n)?.pass !== true);
      rows.push({
        block: r.block,
        rep: r.rep,
        rank: rank.rank,
        card: rank.card,
        device: rank.device,
        pass: failed.length === 0,
        failed,
        launches_counted: numberIn(lc, 'counted'),
        launches_expected: numberIn(lc, 'expected'),
        launches_during_replays: numberIn(lc, 'launches_during_replays'),
        graph_nodes: numberIn(lc, 'graph_nodes'),
        L: numberIn(pe, 'L'),
        P: numberIn(pe, 'P'),
        win: typeof win === 'boolean' ? win : null,
        instantiate_ms: numberIn(lc, 'instantiate_ms'),
        dispatches_per_replay: numberIn(by.get('replay_dispatch'), 'dispatches_per_replay'),
      });
      for (const e of captureErrorsOf(rank.probes)) {
        const key = `${e.class}\0${e.where}\0${e.said}`;
        const seen = errors.get(key);
        if (seen) seen.count++;
        else errors.set(key, { ...e, count: 1 });
      }
    }
  }
  const by_probe = GRAPHRT_PROBES.map((name) => ({
    name,
    passed: rows.filter((row) => !row.failed.includes(name)).length,
    of: rows.length,
  }));
  const missing = Math.max(0, planned - records.length);
  const failing = by_probe.filter((p) => p.passed < p.of);
  const pass = rows.length > 0 && missing === 0 && failing.length === 0;
  const message =
    rows.length === 0
      ? `no probe record committed (${planned} planned)`
      : failing.length > 0
        ? `failed: ${failing.map((p) => `${p.name} on ${p.of - p.passed} of ${p.of} rank-reps`).join('; ')}`
        : missing > 0
          ? `${records.length} of ${planned} planned probe reps committed; every probe of those passed`
          : `every probe passed on ${rows.length} rank-rep(s)`;
  return { planned, rows, by_probe, capture_errors: [...errors.values()], missing, pass, message };
}
