/**
 * Where an experiment's numbers came from, collected once when its results are written and
 * kept in the analysis (so summary.json, report.json and the report's header carry it, and
 * `orch report --from` re-renders it without a clock or a card): orch's version and commit,
 * the spec hash and the hash of its workload alone (what `orch compare` checks), each build's
 * commit and dirty flag, graphrt's version, every card's name, driver, CUDA runtime and SM and
 * memory clocks at the start and end of the experiment, the throttle reasons seen and the reps
 * taken while one was reported (from the committed reps, `addRep`), and the hosts (with the Slurm job each ran in, when it did).
 */

import type { CommitRecord } from '../../jobs/commit-record.ts';
import type { MachineRecord } from '../../jobs/machine-record.ts';
import type { RepResult } from '../../jobs/rep-result.ts';
import type { Spec } from '../../jobs/spec.ts';
import { specHash } from '../../jobs/spec-hash.ts';
import type { ExperimentRecord } from '../../store/experiment-store.ts';
import { orchProvenance } from './orch-provenance.ts';

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

export interface SlurmHostProvenance {
  host: string;
  /** the node the host's worker ran on */
  node: string;
  job: string;
  nodes: string;
  partition: string;
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
  /** the Slurm allocation of each host whose worker ran in one (absent in results written before it was recorded) */
  slurm?: SlurmHostProvenance[];
  cards: CardProvenance[];
  throttle: {
    /** Every reason a card reported at a rep's start or end, with how many reps saw it. */
    reasons: Record<string, number>;
    /** Reps (`block/arm/rep`) taken while a card reported a reason that lowers clocks. */
    reps: string[];
  };
  /** Each host as its worker saw it when its first committed block started (jobs/machine-record.ts); absent in older results. */
  machines?: HostMachine[];
}

export type HostMachine = { host: string } & MachineRecord;

/** NVML reasons that do not slow a busy card (idle, a clock setting, boost sync, the display). */
const NOT_THROTTLE = new Set(['gpu_idle', 'applications_clocks_setting', 'sync_boost', 'display_clock_setting']);

export interface ProvenanceInput {
  spec: Spec;
  hash: string;
  created: number;
  ended: number | null;
  orch: Provenance['orch'];
}

/** The provenance folded from the committed records: the commit records, then the reps in the order they ran. */
export class ProvenanceFold {
  private readonly cards = new Map<string, CardProvenance>();
  private readonly graphrt = new Set<string>();
  private readonly hosts = new Set<string>();
  private readonly slurm = new Map<string, SlurmHostProvenance>();
  private readonly reasons: Record<string, number> = {};
  private readonly throttled = new Set<string>();
  private readonly machines = new Map<string, MachineRecord>();

  /**
   * One block's commit record (jobs/commit-record.ts), in block order: its ranks' hosts, cards,
   * devices and graphrt versions, and its hosts' machine records and Slurm allocations, from the
   * committed record, never the stream's copies of the hellos and block-starts (which may be lost).
   */
  addCommit(c: CommitRecord): void {
    for (const h of c.hosts ?? []) {
      if (!this.machines.has(h.host)) this.machines.set(h.host, h.machine);
      if (h.slurm !== undefined) {
        const { job, nodes, partition, node } = h.slurm;
        this.slurm.set(h.host, { host: h.host, node, job, nodes, partition });
      }
    }
    for (const r of c.ranks ?? []) {
      this.hosts.add(r.host);
      for (const v of r.graphrt) this.graphrt.add(v);
      const id = `${r.host}/${r.card}`;
      if (this.cards.has(id)) continue;
      this.cards.set(id, {
        host: r.host,
        card: r.card,
        backend: r.backend,
        name: r.device,
        sm: r.sm,
        driver: r.driver,
        cuda_runtime: /runtime (\S+)/.exec(r.driver ?? '')?.[1] ?? null,
        clocks: { start: null, end: null },
      });
    }
  }

  /**
   * One committed rep (jobs/rep-result.ts), in the order the reps ran: each rank's clocks on its
   * card, and its throttle reasons. From the committed record, never the stream's copy of the line.
   */
  addRep(r: RepResult): void {
    for (const a of r.answers ?? []) {
      const clocks = a.line.clocks;
      if (clocks === undefined) continue;
      const card = this.cards.get(`${a.host}/${a.card}`);
      if (card) {
        card.clocks.start ??= clock(clocks.start);
        card.clocks.end = clock(clocks.end);
      }
      const seen = new Set([...clocks.start.reasons, ...clocks.end.reasons]);
      for (const why of seen) this.reasons[why] = (this.reasons[why] ?? 0) + 1;
      if ([...seen].some((why) => !NOT_THROTTLE.has(why))) this.throttled.add(`${r.block}/${r.arm}/${r.rep}`);
    }
  }

  result(input: ProvenanceInput): Provenance {
    const { spec } = input;
    return {
      orch: input.orch,
      spec_hash: input.hash,
      workload_hash: specHash(spec.workload),
      created: new Date(input.created).toISOString(),
      ended: input.ended === null ? null : new Date(input.ended).toISOString(),
      builds: Object.entries(spec.builds ?? {}).map(([name, b]) => ({
        name,
        ref: b.ref,
        commit: b.commit ?? null,
        dirty: b.dirty ?? false,
      })),
      graphrt: [...this.graphrt].sort(),
      hosts: [...this.hosts].sort(),
      ...(this.slurm.size > 0 ? { slurm: [...this.slurm.values()].sort((a, b) => a.host.localeCompare(b.host)) } : {}),
      cards: [...this.cards.values()].sort((a, b) => `${a.host}/${a.card}`.localeCompare(`${b.host}/${b.card}`)),
      throttle: { reasons: this.reasons, reps: [...this.throttled] },
      machines: [...this.machines.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([host, m]) => ({ host, ...m })),
    };
  }
}

const clock = (c: ClockSample): ClockSample => ({ sm_mhz: c.sm_mhz, mem_mhz: c.mem_mhz });

/** The provenance of an experiment's record, with the orch that writes it. */
export function provenanceOf(
  exp: Pick<ExperimentRecord, 'spec' | 'hash' | 'created' | 'ended'>,
  records: ProvenanceFold,
): Provenance {
  const { version, commit, dirty } = orchProvenance();
  return records.result({
    spec: exp.spec,
    hash: exp.hash,
    created: exp.created,
    ended: exp.ended,
    orch: { version, commit, dirty },
  });
}
