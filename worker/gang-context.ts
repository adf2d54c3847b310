/**
 * What every room of a block attempt (worker/block-executor.ts) shares: the job, this host, the
 * gang's event stream and logger, and how a card of this host maps to its global rank and event
 * tags. Read-only: the rooms' state lives in the rooms.
 */
import type { Logger } from 'pino';
import type { BlockJob } from '../jobs/block-job.ts';
import { indexAt } from '../jobs/index-at.ts';
import type { EventStream, EventTags } from './event-stream.ts';

export class GangContext {
  constructor(
    readonly job: BlockJob,
    readonly host: string,
    readonly events: EventStream,
    readonly log: Logger,
  ) {}

  /** Event tags of the gang (i = '') or of its i-th card's rank. */
  tags(i: number | ''): EventTags {
    const j = this.job;
    return {
      block: j.block,
      attempt: j.attempt,
      epoch: j.epoch,
      host: this.host,
      card: i === '' ? '' : indexAt(j.cards, i, 'card'),
      rank: i === '' ? '' : this.rankOf(i),
    };
  }

  /** The global rank of this host's i-th card (spread gangs: first_rank + i). */
  rankOf(i: number): number {
    return (this.job.first_rank ?? 0) + i;
  }
}
