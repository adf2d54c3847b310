/**
 * How long Redis keeps an ended experiment: its keys (`<prefix>:experiment:<id>` and every
 * `<prefix>:experiment:<id>:*`) get an expiry once its results are written to disk
 * (ORCH_EXPERIMENT_TTL_DAYS, default 7; 0 keeps them), and `orch prune` removes those of
 * experiments that ended before a cutoff at once. Both go through store/lua/experiment-retire.lua,
 * which acts only on an ended experiment. The results directories on disk are never touched.
 */
import type { Redis } from 'ioredis';
import { UserInputError } from '../jobs/errors.ts';
import { type ExperimentState, TERMINAL_EXPERIMENT_STATES } from './experiment-store.ts';
import { orchKeys } from './keys.ts';
import { runScript } from './scripts.ts';

export const TTL_ENV = 'ORCH_EXPERIMENT_TTL_DAYS';
export const DEFAULT_TTL_DAYS = 7;
const DAY_S = 24 * 3600;

/** Seconds an ended experiment's keys are kept after its results are written; null: forever. */
export function experimentTtlSeconds(env: NodeJS.ProcessEnv = process.env): number | null {
  const raw = env[TTL_ENV];
  if (raw === undefined || raw.trim() === '') return DEFAULT_TTL_DAYS * DAY_S;
  const days = Number(raw);
  if (!Number.isFinite(days) || days < 0) {
    throw new UserInputError('CLI_USAGE', `${TTL_ENV}=${raw}: not a number of days (0 or more)`, {
      hint: `${TTL_ENV}=7 keeps an ended experiment's keys a week after its results are written; 0 keeps them until orch prune`,
    });
  }
  return days === 0 ? null : Math.max(1, Math.round(days * DAY_S));
}

export interface PruneCandidate {
  id: string;
  state: ExperimentState | 'gone';
  /** ms since the epoch; null when the experiment's hash is gone */
  ended: number | null;
}

export class ExperimentRetention {
  private readonly keys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = orchKeys(prefix);
  }

  /** Puts an expiry of `seconds` on every key of an ended experiment; false when it has not ended. */
  async expire(id: string, seconds: number): Promise<boolean> {
    return (await this.retire(id, 'expire', seconds)) === 1;
  }

  /** The experiments that ended at or before `cutoffMs` (and ids whose hash is gone), oldest first. */
  async candidates(cutoffMs: number): Promise<PruneCandidate[]> {
    const ids = await this.redis.zrange(this.keys.sched.experiments, '0', '-1');
    const pipe = this.redis.pipeline();
    for (const id of ids) pipe.hmget(this.keys.exp(id), 'state', 'ended');
    const rows = (await pipe.exec()) ?? [];
    const out: PruneCandidate[] = [];
    ids.forEach((id, i) => {
      const [state, ended] = (rows[i]?.[1] as (string | null)[] | undefined) ?? [null, null];
      if (state === null || state === undefined) out.push({ id, state: 'gone', ended: null });
      else if (TERMINAL_EXPERIMENT_STATES.has(state as ExperimentState) && Number(ended) <= cutoffMs)
        out.push({ id, state: state as ExperimentState, ended: Number(ended) });
    });
    return out;
  }

  /** Removes every key of an experiment that ended at or before `cutoffMs`; false when it was kept. */
  async remove(id: string, cutoffMs: number): Promise<boolean> {
    return (await this.retire(id, 'remove', cutoffMs)) === 1;
  }

  private async retire(id: string, action: 'expire' | 'remove', arg: number): Promise<number> {
    const own = this.keys.exp(id);
    const others: string[] = [];
    let cursor = '0';
    do {
      const [next, found] = await this.redis.scan(cursor, 'MATCH', `${globEscape(own)}:*`, 'COUNT', 1000);
      cursor = next;
      others.push(...found);
    } while (cursor !== '0');
    return Number(
      await runScript(
        this.redis,
        'experiment-retire',
        [own, this.keys.sched.experiments, ...others],
        [id, action, arg],
      ),
    );
  }
}

/** A key as a SCAN pattern that matches only itself (an experiment's name may hold `*`, `?`, `[`). */
function globEscape(s: string): string {
  return s.replace(/[*?[\]\\]/g, '\\$&');
}
