/**
 * Whether a message of the revoke channel (`<prefix>:lease-revoked`) is borne out by Redis state
 * before the worker acts on it. Anyone who can reach Redis can PUBLISH on that channel; a
 * message alone must not kill a running gang (a forged revocation) or stop it (a forged cancel
 * notice). What makes each genuine is a state change that happened before it was sent:
 * - a revocation: revoke-gang.lua deletes the leases and then publishes, in one script, so a card
 *   named in a real one is no longer leased under the gang's epoch;
 * - a cancel notice: experiment-cancel.lua moved the experiment to `cancelling` (or it has since
 *   ended `cancelled`) before `orch cancel` or the scheduler published it.
 * A message that fails its check is dropped (logged without its reason text, counted by the
 * caller); the lease keeper's renew still finds a real revocation within one renew period.
 */
import type { Redis } from 'ioredis';
import type { LeaseChannelMessage } from '../store/cancel-notice.ts';
import { ExperimentStore } from '../store/experiment-store.ts';
import { LeaseStore } from '../store/lease-store.ts';

/** What the check needs of a running gang part. */
export interface RunningPart {
  experiment: string;
  epoch: number;
  cards: string[];
}

export class LeaseMessageCheck {
  private readonly leases: LeaseStore;
  private readonly experiments: ExperimentStore;

  constructor(redis: Redis, prefix: string) {
    this.leases = new LeaseStore(redis, { prefix });
    this.experiments = new ExperimentStore(redis, prefix);
  }

  /** Whether `message` is true of `part` now (the part is one the message names). */
  async confirms(message: LeaseChannelMessage, part: RunningPart): Promise<boolean> {
    if (message.kind === 'cancel') {
      const state = await this.experiments.state(part.experiment);
      return state === 'cancelling' || state === 'cancelled';
    }
    const named = part.cards.filter((c) => message.cards.includes(c));
    const held = await this.leases.held(named);
    // revoked: some named card is no longer leased under this part's epoch
    return named.some((card) => !held.some((l) => l.card === card && l.epoch === part.epoch));
  }
}
