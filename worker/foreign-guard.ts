/**
 * The gang's look for foreign processes on its cards (foreign_process: fail | wait): one look at
 * every card at once, and the guard that fails the attempt naming them, or waits until they are
 * gone (polling), with the wait and its end on the gang's worker track.
 */
import type { Card } from '../jobs/card.ts';
import { OrchError } from '../jobs/errors.ts';
import { indexAt } from '../jobs/index-at.ts';
import { describeForeign, type ForeignProcessProbe } from './foreign-processes.ts';
import type { GangContext } from './gang-context.ts';
import type { GangFate } from './gang-fate.ts';

export interface ForeignGuardOptions {
  cards: Map<string, Card>;
  /** each card's flock file, in the job's card order */
  lockPaths: string[];
  probe: ForeignProcessProbe;
  /** foreign_process: wait — how often to look again */
  pollMs: number;
  /** true once the worker is stopping (SIGTERM): no more waiting */
  stopping: () => boolean;
}

export class ForeignGuard {
  constructor(
    private readonly gang: GangContext,
    private readonly opts: ForeignGuardOptions,
    private readonly fate: GangFate,
  ) {}

  /** Foreign processes on any card of the gang: fail naming them, or wait until they are gone. `seen`: what a look already running found. */
  async guard(ours: number[], seen?: string[]): Promise<void> {
    const { job, events, log } = this.gang;
    let waitingSince: number | null = null;
    for (;;) {
      // later rounds look again
      const found = seen ?? (await this.fate.race(this.look(ours)));
      seen = undefined;
      if (found.length === 0) {
        if (waitingSince !== null)
          events.worker(this.gang.tags(''), 'foreign-gone', { waited_ms: Date.now() - waitingSince });
        return;
      }
      if (job.foreign_process === 'fail') throw new OrchError('FOREIGN_PROCESS', found.join('; '));
      if (this.opts.stopping()) {
        throw new OrchError(
          'WORKER_STOPPING',
          `the worker of host ${this.gang.host} was stopped (SIGTERM) while the block waited for a foreign process: ${found.join('; ')}`,
        );
      }
      if (waitingSince === null) {
        waitingSince = Date.now();
        log.warn({ found }, 'foreign process on a leased card; waiting (foreign_process: wait)');
        events.worker(this.gang.tags(''), 'foreign-wait', { found });
      }
      await this.fate.race(new Promise((r) => setTimeout(r, this.opts.pollMs)));
    }
  }

  /** One look at every card of the gang, all at once: a description per card a foreign process uses. */
  async look(ours: number[]): Promise<string[]> {
    const mine = new Set(ours);
    const found = await Promise.all(
      this.gang.job.cards.map(async (id, i) => {
        const card = this.opts.cards.get(id) as Card;
        const procs = await this.opts.probe.list(card, indexAt(this.opts.lockPaths, i, 'card lock path'), mine);
        return procs.length > 0 ? describeForeign(card, procs) : null;
      }),
    );
    return found.filter((f): f is string => f !== null);
  }
}
