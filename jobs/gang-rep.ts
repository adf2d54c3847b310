/**
 * One rep of a gang from its ranks' answers: the one reduction of N ranks into the rep that is
 * committed (jobs/rep-result.ts). The worker reduces one host's ranks (worker/rep-measure.ts), the
 * leading part of a spread gang every host's (worker/merge-gang-results.ts), the readers of a
 * committed rep its per-rank answers (orchestrator/stats/busy-share.ts); all call this file.
 *
 * - step value: per step the slowest rank's time (max over ranks), over the steps every rank has;
 * - identity: kept per rank (each answer's hashes stay in `answers`); the gang's `hashes` are rank 0's;
 * - unsupported toggles and throttle reasons: any rank's;
 * - card time: per card, from each rank's own span (never summed over ranks).
 */
import { z } from 'zod';
import { throttleOf } from './clock-hygiene.ts';
import { type CommandRep, CommandRepSchema } from './command-line.ts';
import { type Rep, RepSchema } from './graphrt-protocol.ts';
import { GRAPHRT_TOGGLES, type GraphrtToggle } from './graphrt-toggles.ts';

const count = z.int().min(0);

/**
 * One rank's answer to a rep, as committed with its block: the rank's rep line as it said it
 * (bounded: a line is at most jobs/line-limit.ts's MAX_RANK_LINE_BYTES), which rank on which card
 * of which host, and when its worker read it (epoch ms, that worker's clock: it places the rank's
 * span, `t_end_ns − t_start_ns` on the rank's own clock, on the wall clock of the trace and the lease).
 */
export const RankAnswerSchema = z.strictObject({
  rank: count,
  card: z.string(),
  host: z.string(),
  answered_ms: z.number().min(0),
  line: z.union([RepSchema, CommandRepSchema]),
});
export type RankAnswer = z.infer<typeof RankAnswerSchema>;

/** Per step the slowest rank's value, over the steps every rank has (a rank with fewer steps cuts the gang's). */
export function stepMax(perRank: readonly (readonly number[])[]): number[] {
  if (perRank.length === 0) return [];
  const n = Math.min(...perRank.map((s) => s.length));
  const out = new Array<number>(n);
  for (let k = 0; k < n; k++) {
    let m = -Infinity;
    for (const s of perRank) m = Math.max(m, s[k] ?? -Infinity);
    out[k] = m;
  }
  return out;
}

/** The gang's view of one rep: what the committed rep record holds beside the answers. */
export interface GangRep {
  step_ms: number[];
  backend: string;
  mode: 'graph' | 'eager';
  launches_per_step?: number;
  nodes?: number | null;
  hashes?: string[];
  unsupported?: GraphrtToggle[];
  throttled?: string[];
}

/** N ranks' answers (rank order) reduced to the rep: see the file's head. */
export function reduceGang(answers: readonly RankAnswer[]): GangRep {
  const lines = answers.map((a) => a.line);
  const first = lines[0];
  if (first === undefined) throw new Error('a gang rep needs at least one rank answer');
  const step_ms = stepMax(lines.map((l) => l.step_ms));
  const throttled = throttleOf(
    lines.map((l) => ({
      clocks: l.clocks,
      xid_events: 'xid_events' in l ? l.xid_events : undefined,
      ecc_errors: l.ecc_errors,
    })),
  );
  const extra = throttled.length > 0 ? { throttled } : {};
  if (first.backend === 'command') {
    return {
      step_ms,
      backend: first.backend,
      mode: first.mode,
      ...(first.hashes === undefined ? {} : { hashes: first.hashes }),
      ...extra,
    };
  }
  // A toggle without effect on any rank was not measured by this rep: the report must say so.
  const unsupported = GRAPHRT_TOGGLES.filter((t) =>
    lines.some((l) => l.backend !== 'command' && l.unsupported.includes(t)),
  );
  return {
    step_ms,
    backend: first.backend,
    mode: first.mode,
    launches_per_step: first.launches_per_step,
    nodes: first.nodes,
    hashes: first.hashes,
    unsupported,
    ...extra,
  };
}

/** A rank's unmeasured steps: its warm-up steps and, on a graph rep, the settling eager step; null without warmup_ms. */
export function warmupSteps(l: Rep | CommandRep): number[] | null {
  if (l.warmup_ms === undefined) return null;
  return 'settle_ms' in l && typeof l.settle_ms === 'number' ? [...l.warmup_ms, l.settle_ms] : l.warmup_ms;
}

/** A rank's span on its own clock (ns), or null when its line has none. */
export function rankSpan(l: Rep | CommandRep): { start: number; end: number } | null {
  return l.t_start_ns === undefined || l.t_end_ns === undefined ? null : { start: l.t_start_ns, end: l.t_end_ns };
}
