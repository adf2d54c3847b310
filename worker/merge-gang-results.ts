/**
 * A spread gang's results as one block: the leading part's reps and gates merged with every
 * other part's staged ones (store/gang-staging.ts). Every part's rank answers are kept, in rank
 * order, and reduced once more over all hosts by jobs/gang-rep.ts (per step the slowest rank); a
 * gate passes only when it passed on every rank of every host.
 */

import type { GangHost } from '../jobs/commit-record.ts';
import { reduceGang, stepMax } from '../jobs/gang-rep.ts';
import type { RankOrigin } from '../jobs/rank-origin.ts';
import type { CommitGate, CommitRep } from '../store/result-store.ts';

export interface PartResults {
  cards: string[];
  reps: CommitRep[];
  gates: CommitGate[];
  /** where each rank of the part ran (jobs/rank-origin.ts) */
  ranks: RankOrigin[];
  /** the part's host as its worker read it at the start */
  hosts: GangHost[];
}

/** `lead` first: its rep fields (hashes, backend, mode) speak for the gang, as rank 0's do on one host. */
export function mergeGangResults(lead: PartResults, others: PartResults[]): PartResults {
  const parts = [lead, ...others];
  const cards = parts.flatMap((p) => p.cards);
  const reps = lead.reps.map((r, i) => {
    const same = parts.map((p) => p.reps[i]);
    if (same.some((s) => s === undefined || s.arm !== r.arm || s.rep !== r.rep)) {
      throw new Error(
        `the parts of block ${r.block} disagree on rep ${i} (${r.arm} #${r.rep}): ${same.map((s) => (s ? `${s.arm} #${s.rep}` : 'missing')).join(', ')}`,
      );
    }
    if (same.every((s) => s!.result.answers !== undefined && s!.result.answers.length > 0)) {
      const answers = same.flatMap((s) => s!.result.answers!);
      const { throttled: _lead, ...rest } = r.result;
      return { ...r, result: { ...rest, ...reduceGang(answers), cards, answers } };
    }
    // a part without answers (a probe's rep): the parts' step values, per step the slowest
    const step_ms = stepMax(same.map((s) => s!.result.step_ms));
    const unsupported = [...new Set(same.flatMap((s) => s!.result.unsupported ?? []))];
    return {
      ...r,
      result: { ...r.result, step_ms, cards, ...(r.result.unsupported === undefined ? {} : { unsupported }) },
    };
  });
  const gates = lead.gates.map((g) => {
    const same = parts.map((p) => p.gates.find((x) => x.arm === g.arm));
    const present = same.filter((s): s is CommitGate => s !== undefined);
    const bad = present.map((s) => s.result.first_bad_replay).filter((x): x is number => x !== null && x !== undefined);
    return {
      ...g,
      result: {
        ...g.result,
        pass: present.length === parts.length && present.every((s) => s.result.pass),
        first_bad_replay: bad.length > 0 ? Math.min(...bad) : null,
        detail: present.flatMap((s) => s.result.detail ?? []),
      },
    };
  });
  return {
    cards,
    reps,
    gates,
    ranks: parts.flatMap((p) => p.ranks).sort((a, b) => a.rank - b.rank),
    hosts: parts.flatMap((p) => p.hosts),
  };
}
