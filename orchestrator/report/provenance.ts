/**
 * Where an experiment's numbers came from, collected once when its results are written and
 * kept in the analysis (so summary.json, report.json and the report's header carry it, and
 * `orch report --from` re-renders it without a clock or a card): orch's version and commit,
 * the spec hash and the hash of its workload alone (what `orch compare` checks), each build's
 * commit and dirty flag, graphrt's version, every card's name, driver, CUDA runtime and SM and
 * memory clocks at the start and end of the experiment, the throttle reasons seen and the reps
 * taken while one was reported, and the hosts.
 */
import { specHash } from '../../jobs/spec-hash.ts';
import type { Spec } from '../../jobs/spec.ts';
import { orchProvenance } from './orch-provenance.ts';
import type { CollectedResults, StreamEvent } from '../results/collect-results.ts';

export interface ClockSample {
  sm_mhz: number;
  mem_mhz: number;
}

export interface CardProvenance {
  host: string;
  card: string;
  backend: string;
  /** graphrt's `device`; null for a command workload (its process does not say). */
  name: string | null;
  sm: string | null;
  driver: string | null;
  cuda_runtime: string | null;
  /** The first rep's clocks at its start and the last rep's at its end (cuda only). */
  clocks: { start: ClockSample | null; end: ClockSample | null };
}

export interface Provenance {
  /** dirty: absent in results written before it was recorded */
  orch: { version: string | null; commit: string | null; dirty?: boolean | null };
  spec_hash: string;
  /** sha256 of the canonical workload section alone: two runs measure the same thing only if it is equal. */
  workload_hash: string;
  /** From the recorded experiment, never the clock at render time. */
  created: string;
  ended: string | null;
  builds: { name: string; ref: string; commit: string | null; dirty: boolean }[];
  graphrt: string[];
  hosts: string[];
  cards: CardProvenance[];
  throttle: {
    /** Every reason a card reported at a rep's start or end, with how many reps saw it. */
    reasons: Record<string, number>;
    /** Reps (`block/arm/rep`) taken while a card reported a reason that lowers clocks. */
    reps: string[];
  };
}

/** NVML reasons that do not slow a busy card (idle, a clock setting, boost sync, the display). */
const NOT_THROTTLE = new Set(['gpu_idle', 'applications_clocks_setting', 'sync_boost', 'display_clock_setting']);

interface ClockReading extends ClockSample {
  reasons: string[];
}

interface HelloLine {
  type: 'hello';
  backend: string;
  device?: string;
  sm?: string | null;
  driver?: string;
  version?: string;
}

interface RepLine {
  type: 'rep';
  arm: string;
  clocks?: { start: ClockReading; end: ClockReading };
}

const eventLine = (e: StreamEvent): { type?: unknown } | null => {
  const ev = typeof e.event === 'string' ? (() => { try { return JSON.parse(e.event as string) as unknown; } catch { return null; } })() : e.event;
  return typeof ev === 'object' && ev !== null ? (ev as { type?: unknown }) : null;
};

export interface ProvenanceInput {
  spec: Spec;
  hash: string;
  created: number;
  ended: number | null;
  events: StreamEvent[];
  orch: Provenance['orch'];
}

export function collectProvenance(input: ProvenanceInput): Provenance {
  const cards = new Map<string, CardProvenance>();
  const graphrt = new Set<string>();
  const hosts = new Set<string>();
  const reasons: Record<string, number> = {};
  const throttled: string[] = [];
  const repCount = new Map<string, number>();
  const clock = (c: ClockReading): ClockSample => ({ sm_mhz: c.sm_mhz, mem_mhz: c.mem_mhz });
  for (const e of input.events) {
    const line = eventLine(e);
    if (line === null || e.card === '') continue;
    hosts.add(e.host);
    const id = `${e.host}/${e.card}`;
    if (line.type === 'hello') {
      const h = line as HelloLine;
      if (h.version !== undefined) graphrt.add(h.version);
      if (!cards.has(id)) {
        cards.set(id, {
          host: e.host, card: e.card, backend: h.backend, name: h.device ?? null, sm: h.sm ?? null, driver: h.driver ?? null,
          cuda_runtime: /runtime (\S+)/.exec(h.driver ?? '')?.[1] ?? null, clocks: { start: null, end: null },
        });
      }
    } else if (line.type === 'rep' && e.committed) {
      const r = line as RepLine;
      // The rep's index among its arm's reps of the block, as results number them (rank 0's lines).
      const key = `${e.block}/${r.arm}/${e.rank}`;
      const rep = repCount.get(key) ?? 0;
      repCount.set(key, rep + 1);
      if (r.clocks === undefined) continue;
      const card = cards.get(id);
      if (card) {
        card.clocks.start ??= clock(r.clocks.start);
        card.clocks.end = clock(r.clocks.end);
      }
      const seen = new Set([...r.clocks.start.reasons, ...r.clocks.end.reasons]);
      for (const why of seen) reasons[why] = (reasons[why] ?? 0) + 1;
      const field = `${e.block}/${r.arm}/${rep}`;
      if ([...seen].some((why) => !NOT_THROTTLE.has(why)) && !throttled.includes(field)) throttled.push(field);
    }
  }
  const { spec } = input;
  return {
    orch: input.orch,
    spec_hash: input.hash,
    workload_hash: specHash(spec.workload),
    created: new Date(input.created).toISOString(),
    ended: input.ended === null ? null : new Date(input.ended).toISOString(),
    builds: Object.entries(spec.builds ?? {}).map(([name, b]) => ({ name, ref: b.ref, commit: b.commit ?? null, dirty: b.dirty ?? false })),
    graphrt: [...graphrt].sort(),
    hosts: [...hosts].sort(),
    cards: [...cards.values()].sort((a, b) => `${a.host}/${a.card}`.localeCompare(`${b.host}/${b.card}`)),
    throttle: { reasons, reps: throttled },
  };
}

/** The provenance of collected results, with the orch that writes them. */
export function provenanceOf(c: CollectedResults): Provenance {
  const { version, commit, dirty } = orchProvenance();
  return collectProvenance({ spec: c.exp.spec, hash: c.exp.hash, created: c.exp.created, ended: c.exp.ended, events: c.events, orch: { version, commit, dirty } });
}
