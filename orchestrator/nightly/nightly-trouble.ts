/**
 * The nightly runs `orch status` lists: failed or invalid ones of the last week and running ones
 * whose attempt stopped beating (HistoryStore.troubled). A status read never creates a history:
 * with neither ORCH_DB_URL nor an existing SQLite file there is nothing to list, and a database
 * that does not answer is said, not fatal — the cluster's status still prints.
 */
import { existsSync } from 'node:fs';
import type { NightlyRun } from '../../history/history-store.ts';
import { describeTarget, historyTargetFromEnv, openHistory } from '../../history/open-history.ts';
import { messageOf } from '../../jobs/message-of.ts';
import { staleAfter } from './heartbeat.ts';

const WEEK_MS = 7 * 24 * 3600 * 1000;

export interface NightlyTrouble {
  /** the history database read (password masked) */
  history: string;
  /** null when there is no history yet */
  runs:
    | (Pick<NightlyRun, 'id' | 'suite' | 'state' | 'error' | 'alerts' | 'serve_host'> & {
        scheduled_at: string;
        heartbeat_at: string;
        stalled: boolean;
      })[]
    | null;
  /** why the history could not be read */
  error: string | null;
}

export async function nightlyTrouble(env: NodeJS.ProcessEnv = process.env, now = Date.now()): Promise<NightlyTrouble> {
  const target = historyTargetFromEnv(env);
  const history = describeTarget(target);
  if (!target.url && !existsSync(target.file)) return { history, runs: null, error: null };
  try {
    const store = await openHistory(target);
    try {
      const runs = await store.troubled(now - WEEK_MS, staleAfter());
      return {
        history,
        error: null,
        runs: runs.map((r) => ({
          id: r.id,
          suite: r.suite,
          state: r.state,
          stalled: r.stalled,
          error: r.error,
          alerts: r.alerts,
          serve_host: r.serve_host,
          scheduled_at: new Date(r.scheduled_at).toISOString(),
          heartbeat_at: new Date(r.heartbeat_at).toISOString(),
        })),
      };
    } finally {
      await store.close();
    }
  } catch (err) {
    return { history, runs: null, error: messageOf(err) };
  }
}

export function renderNightlyTrouble(t: NightlyTrouble): string[] {
  if (t.error) return ['', 'nightly', `  history ${t.history} could not be read: ${t.error}`];
  if (!t.runs || t.runs.length === 0) return [];
  return [
    '',
    'nightly runs failed or stalled (last 7 days; orch nightly status SUITE)',
    ...t.runs.map((r) => {
      const what = r.stalled
        ? `STALLED: running, last heartbeat ${r.heartbeat_at}${r.serve_host ? ` from ${r.serve_host}` : ''} (its orch serve stopped; no retry took it over)`
        : `${r.state.toUpperCase()}${r.error ? `: ${r.error.split('\n')[0]}` : ''}`;
      return `  ${r.suite} ${r.scheduled_at}  ${what}`;
    }),
  ];
}
