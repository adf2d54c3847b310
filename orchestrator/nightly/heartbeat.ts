/**
 * A nightly run's liveness: the attempt running it writes the run's heartbeat every
 * NIGHTLY_HEARTBEAT_MS; one whose heartbeat is older than staleAfter() is gone (its `orch serve`
 * died), so another attempt may take the night over and `orch status` calls it stalled.
 */
export const NIGHTLY_HEARTBEAT_MS = 30_000;

/** Three missed beats: one late write is not a dead attempt. */
export function staleAfter(heartbeatMs = NIGHTLY_HEARTBEAT_MS): number {
  return 3 * heartbeatMs;
}
