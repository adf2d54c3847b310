/**
 * The cancel notice: `orch cancel` (and the scheduler, for a block that started after the cancel)
 * tells the worker running a gang to stop it gracefully — abort the rep in flight, commit what
 * it measured under its still-held epoch with the rest `cancelled`, release the leases. It goes
 * on the revoke channel (`<prefix>:lease-revoked`) as `{ kind: 'cancel', cards, epochs, reason }`,
 * BEFORE any lease is revoked: a revoked gang can no longer commit (commit-block.lua is fenced by
 * the epoch), so revoking first would drop every rep measured before the cancel. The scheduler
 * revokes after a bounded grace whether or not the worker answered (attempt-observer.ts).
 *
 * A notice is not a change of state (the cancel itself is experiment-cancel.lua): one PUBLISH.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { describeIssues } from '../jobs/schema-issues.ts';
import { orchKeys } from './keys.ts';
import type { RevokeMessage } from './lease-store.ts';

export interface CancelNotice {
  kind: 'cancel';
  cards: string[];
  epochs: number[];
  reason: string;
}

export type LeaseChannelMessage = ({ kind: 'revoke' } & RevokeMessage) | CancelNotice;

/** Publishes a cancel notice for one gang part; returns how many subscribers heard it. */
export async function publishCancel(
  redis: Redis,
  prefix: string,
  part: { cards: string[]; epoch: number },
  reason: string,
): Promise<number> {
  const notice: CancelNotice = { kind: 'cancel', cards: part.cards, epochs: [part.epoch], reason };
  return Number(await redis.publish(orchKeys(prefix).leaseRevoked, JSON.stringify(notice)));
}

/** What the channel carries: a cancel notice, or (no kind) revoke-gang.lua's revocation. */
const LeaseChannelMessageSchema = z.object({
  kind: z.literal('cancel').optional(),
  cards: z.array(z.string()),
  epochs: z.array(z.number()),
  reason: z.string(),
});

/** A message of the revoke channel: a cancel notice, or (no kind) revoke-gang.lua's revocation. */
export function parseLeaseChannelMessage(raw: string): LeaseChannelMessage {
  const r = LeaseChannelMessageSchema.safeParse(JSON.parse(raw));
  if (!r.success)
    throw new Error(
      `not a revocation or cancel notice (it needs cards, epochs and reason): ${describeIssues(r.error)}`,
    );
  const { kind, cards, epochs, reason } = r.data;
  return kind === 'cancel' ? { kind, cards, epochs, reason } : { kind: 'revoke', cards, epochs, reason };
}
