/**
 * The scheduler's wake-up: `orch submit` and `orch cancel` publish on `<prefix>:sched:wake` so
 * the leader's grant pass reads the new experiment (or the cancel) now instead of at its next
 * safety tick. The pass finds experiments in Redis (`<prefix>:sched:active`), never in the
 * message: a wake that nobody hears, or one lost in a reconnect, costs at most that tick.
 */
import type { Redis } from 'ioredis';
import { orchKeys } from './keys.ts';

/** Wakes the leader's grant pass (one PUBLISH; the message carries nothing). */
export async function wakeScheduler(redis: Redis, prefix: string): Promise<void> {
  await redis.publish(orchKeys(prefix).sched.wake, '');
}

/** Calls `onWake` for every wake published from now on, on a connection of its own; `close` ends it. */
export function followWakes(redis: Redis, prefix: string, onWake: () => void): { close: () => void } {
  // a subscribed connection can issue nothing else, and it must not be auto-pipelined
  const sub = redis.duplicate({ enableAutoPipelining: false });
  // its reconnect errors are the follower's: the safety tick covers the gap
  sub.on('error', () => undefined);
  sub.on('message', () => onWake());
  void sub.subscribe(orchKeys(prefix).sched.wake).catch(() => undefined);
  return { close: () => sub.disconnect() };
}
