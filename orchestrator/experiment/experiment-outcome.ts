/**
 * What an ended experiment came to, as the lists show it (the dashboard's experiments page,
 * `orch status`, /metrics): an outcome from a fixed set, the primary comparison's change and CI,
 * and how long it took from submission to its end. Analysing an experiment reads its whole
 * stream, so an ended one is analysed once, by the first list that shows it, and the outcome kept
 * beside it in Redis (store/keys.ts `outcome`): an ended experiment's results no longer change.
 * A cancelled or failed experiment gets no speed verdict: its outcome is its state.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { type ExperimentRecord, TERMINAL_EXPERIMENT_STATES } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { collectRecords } from '../results/collect-results.ts';
import { analyzeRecords } from '../results/write-results.ts';
import { isVerdict, OUTCOMES, VERDICT_CODES } from './outcome-codes.ts';

export const ExperimentOutcomeSchema = z.strictObject({
  outcome: z.enum(OUTCOMES),
  /** the analysis' speed verdict; null for a probe, a cancelled, failed or empty experiment */
  verdict: z.enum(VERDICT_CODES).nullable(),
  /** the primary comparison's relative change (arm / reference − 1) and its CI */
  change: z.number().nullable(),
  ci: z.tuple([z.number(), z.number()]).nullable(),
  duration_ms: z.number().nullable(),
});
export type ExperimentOutcome = z.infer<typeof ExperimentOutcomeSchema>;

async function analyse(redis: Redis, prefix: string, exp: ExperimentRecord): Promise<ExperimentOutcome> {
  const duration_ms = exp.ended ? exp.ended - exp.created : null;
  if (exp.state !== 'done')
    return {
      outcome: exp.state === 'failed' ? 'failed' : 'cancelled',
      verdict: null,
      change: null,
      ci: null,
      duration_ms,
    };
  const collected = await collectRecords(redis, prefix, exp.id);
  if (Object.keys(collected.reps).length === 0)
    return { outcome: 'no-reps', verdict: null, change: null, ci: null, duration_ms };
  const a = analyzeRecords(collected);
  return {
    outcome: a.verdict,
    verdict: isVerdict(a.verdict) ? a.verdict : null,
    change: a.primary?.relative.estimate ?? null,
    ci: a.primary?.relative.ci ?? null,
    duration_ms,
  };
}

/** A kept outcome, or null when there is none or it does not parse (then it is computed again and overwritten). */
function keptOutcome(text: string | null): ExperimentOutcome | null {
  if (text === null) return null;
  try {
    const r = ExperimentOutcomeSchema.safeParse(JSON.parse(text));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

/**
 * The outcome of each of `exps` (null for one not ended): the kept ones in one round trip, the
 * others analysed and kept. An outcome that cannot be computed (its records unreadable) is null
 * and not kept, so the next reader tries again.
 */
export async function experimentOutcomes(
  redis: Redis,
  prefix: string,
  exps: readonly ExperimentRecord[],
): Promise<(ExperimentOutcome | null)[]> {
  const keys = orchKeys(prefix);
  const ended = exps.filter((e) => TERMINAL_EXPERIMENT_STATES.has(e.state));
  const kept = ended.length === 0 ? [] : await redis.mget(ended.map((e) => keys.outcome(e.id)));
  const byId = new Map<string, ExperimentOutcome | null>();
  await Promise.all(
    ended.map(async (exp, i) => {
      const stored = keptOutcome(kept[i] ?? null);
      if (stored) return void byId.set(exp.id, stored);
      const fresh = await analyse(redis, prefix, exp).catch(() => null);
      if (fresh) await redis.set(keys.outcome(exp.id), JSON.stringify(fresh));
      byId.set(exp.id, fresh);
    }),
  );
  return exps.map((e) => byId.get(e.id) ?? null);
}

/** "+2.1 % (CI +1.6 – +2.6 %)", or '–' without a change. */
export function formatChange(o: Pick<ExperimentOutcome, 'change' | 'ci'> | null): { change: string; ci: string } {
  const signed = (x: number) => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(2)} %`;
  return {
    change: o?.change === null || o?.change === undefined ? '–' : signed(o.change),
    ci: o?.ci ? `${signed(o.ci[0])} – ${signed(o.ci[1])}` : '–',
  };
}

/** "4 min 12 s", "38 s", "2 h 5 min"; '–' while it runs. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '–';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}
