/**
 * One planned rep measured on the whole gang: a `rep` op on every rank, the gang's step time the
 * slowest rank's per step; or, for the design probe, a `probe` op whose probe lines per rank
 * become the probe record (and a rep without steps, committed, so the rep counts as measured).
 */

import { OrchError } from '../jobs/errors.ts';
import { type RankAnswer, reduceGang } from '../jobs/gang-rep.ts';
import { indexAt } from '../jobs/index-at.ts';
import type { ProbeRecord } from '../jobs/probe-record.ts';
import type { RankHelloLine } from '../jobs/rank-line.ts';
import { type RepRef, repResultFields } from '../jobs/rep-ref.ts';
import type { CommitRep } from '../store/result-store.ts';
import type { GangContext } from './gang-context.ts';
import type { GangRanks } from './gang-ranks.ts';
import { armOf, opId } from './rank-runner.ts';

export interface Measured {
  rep: CommitRep;
  record: ProbeRecord | null;
}

export class RepMeasure {
  constructor(
    private readonly gang: GangContext,
    private readonly ranks: GangRanks,
  ) {}

  /** The planned rep `p`, measured as its workload measures (a probe workload: a probe). */
  measure(p: RepRef, round = 0): Promise<Measured> {
    if (this.gang.job.trace_probe === true) return this.trace(p);
    return this.probing ? this.probe(p) : this.rep(p, round).then((rep) => ({ rep, record: null }));
  }

  /** design probe: each planned rep is one `probe` request (five probe lines per rank), or a resident rank's `trace` */
  get probing(): boolean {
    const w = this.gang.job.workload;
    return (w.runtime === 'native' && w.kind === 'probe') || this.gang.job.trace_probe === true;
  }

  /**
   * The trace probe of a resident command rank: each planned rep is one `trace` request; every
   * rank's answer and its card's chain run (on its hello) become the probe record.
   */
  private async trace(p: RepRef): Promise<{ rep: CommitRep; record: ProbeRecord }> {
    const { job, host } = this.gang;
    const lines = await this.ranks.all(
      { id: opId(job, 'trace', p.position), op: 'trace', arm: armOf(job, p.arm) },
      'trace',
    );
    const hellos = this.ranks.hellos.map((h) => (h?.backend === 'command' ? h : undefined));
    const backend = hellos[0]?.program?.backend ?? 'cpu';
    const ranks = lines.map((trace, i) => {
      const hello = hellos[i];
      return {
        rank: this.gang.rankOf(i),
        card: indexAt(job.cards, i, 'card'),
        device: hello?.program?.device ?? '?',
        probes: [],
        trace,
        ...(hello?.graph_node_floor === undefined ? {} : { floor: hello.graph_node_floor }),
      };
    });
    const common = repResultFields(job, p);
    return {
      record: { ...common, kind: 'trace', backend, host, ranks },
      rep: {
        block: job.block,
        arm: p.arm,
        rep: p.rep,
        result: { ...common, step_ms: [], backend: 'command', mode: lines[0]?.mode ?? 'eager', host, cards: job.cards },
      },
    };
  }

  private async probe(p: RepRef): Promise<{ rep: CommitRep; record: ProbeRecord }> {
    const { job, host } = this.gang;
    const lines = await this.ranks.probe({ id: opId(job, 'probe', p.position), op: 'probe', arm: armOf(job, p.arm) });
    const hellos = this.ranks.hellos;
    const backend = hellos[0]?.backend;
    if (backend !== 'cpu' && backend !== 'cuda')
      throw new OrchError(
        'RANK_ANSWERED_ERROR',
        `block ${job.block}: probe answered by a rank whose hello says backend ${backend ?? 'none'}, not graphrt's cpu or cuda`,
      );
    const ranks = lines.map((probes, i) => ({
      rank: this.gang.rankOf(i),
      card: indexAt(job.cards, i, 'card'),
      device: deviceOf(hellos[i]),
      probes: probes.map((l) => ({ name: l.name, pass: l.pass, detail: l.detail })),
    }));
    const common = repResultFields(job, p);
    return {
      record: { ...common, backend, host, ranks },
      rep: {
        block: job.block,
        arm: p.arm,
        rep: p.rep,
        result: { ...common, step_ms: [], backend, mode: 'graph', host, cards: job.cards },
      },
    };
  }

  /** One rep on every rank, reduced to the gang's rep by jobs/gang-rep.ts (per step the slowest rank); every rank's answer kept. */
  private async rep(p: RepRef, round: number): Promise<CommitRep> {
    const { job, host } = this.gang;
    const got = await this.ranks.answers(
      { id: repOpId(job, p.position, round), op: 'rep', arm: armOf(job, p.arm) },
      'rep',
    );
    const answers: RankAnswer[] = got.map((a, i) => ({
      rank: this.gang.rankOf(i),
      card: indexAt(job.cards, i, 'card'),
      host,
      answered_ms: a.answeredMs,
      line: a.line,
    }));
    return {
      block: job.block,
      arm: p.arm,
      rep: p.rep,
      result: {
        ...repResultFields(job, p),
        ...reduceGang(answers),
        host,
        cards: job.cards,
        answers,
      },
    };
  }
}

/** A rep request's id: re-run `round` of a rep (hygiene: discard) has its own, so no answer is taken for another's. */
export function repOpId(job: Parameters<typeof opId>[0], position: number, round: number): string {
  return round === 0 ? opId(job, 'rep', position) : `${opId(job, 'rep', position)}-rerun${round}`;
}

/** The device a rank's hello names (graphrt's `device`), `?` for a rank without one. */
function deviceOf(hello: RankHelloLine | undefined): string {
  return hello !== undefined && 'device' in hello && typeof hello.device === 'string' ? hello.device : '?';
}
