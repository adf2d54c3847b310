/**
 * The running attempts' live count (`<prefix>:experiment:<id>:progress`, lua/note-rep-progress.lua):
 * per block attempt the reps it has measured, and per block its latest rep (arm, mode, median step,
 * when). The leading worker of a gang notes each rep as it is measured (worker/rep-pipeline.ts);
 * `orch watch`, `orch status` and the dashboard read it (orchestrator/experiment/progress.ts), not
 * the event stream, whose copy of a rep line may be cut (16 KiB) or dropped. A live view, not the
 * record: a rep counts once its block commits (jobs/rep-result.ts).
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { parseStored } from '../jobs/parse-stored.ts';
import { orchKeys } from './keys.ts';
import { runScript } from './scripts.ts';

export const LatestRepSchema = z.strictObject({
  arm: z.string(),
  mode: z.string(),
  backend: z.string(),
  /** the gang's median measured step, ms; null for a rep without steps */
  median_ms: z.number().nullable(),
  steps: z.int().min(0),
  /** epoch ms on the noting worker's clock: when its rep was measured */
  at: z.number(),
});
export type LatestRep = z.infer<typeof LatestRepSchema>;

/** One block attempt's count: how many reps it measured, the last at `at` (its worker's clock). */
export interface AttemptProgress {
  done: number;
  at: number;
}

export interface ExperimentProgress {
  /** `<block>/<attempt>` → what the attempt measured so far */
  attempts: Map<string, AttemptProgress>;
  /** block → its latest measured rep, whichever attempt */
  latest: Map<number, LatestRep>;
}

export class RepProgress {
  private readonly keys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = orchKeys(prefix);
  }

  /** One rep of `block`'s `attempt` measured; false when the experiment is gone (nothing written). */
  async note(experiment: string, block: number, attempt: number, latest: LatestRep): Promise<boolean> {
    const reply = await runScript(
      this.redis,
      'note-rep-progress',
      [this.keys.exp(experiment), this.keys.progress(experiment)],
      [`${block}/${attempt}`, `${block}/latest`, JSON.stringify(LatestRepSchema.parse(latest))],
    );
    return reply !== 0;
  }

  async read(experiment: string): Promise<ExperimentProgress> {
    const key = this.keys.progress(experiment);
    const raw = await this.redis.hgetall(key);
    const latest = new Map<number, LatestRep>();
    const counts = new Map<string, number>();
    for (const [field, value] of Object.entries(raw)) {
      const [block, what] = field.split('/');
      if (what === 'latest') latest.set(Number(block), parseStored(LatestRepSchema, value, `${key} field ${field}`));
      else counts.set(field, Number(value));
    }
    const attempts = new Map<string, AttemptProgress>();
    for (const [field, done] of counts) {
      const block = Number(field.split('/')[0]);
      attempts.set(field, { done, at: latest.get(block)?.at ?? 0 });
    }
    return { attempts, latest };
  }
}
