/**
 * The nightly history as the dashboard reads it (history/open-history.ts: ORCH_DB_URL, else the
 * SQLite file): opened at the first page or scrape that needs it and again after a failure (the
 * database may come up later than the dashboard), closed with the server. A dashboard never
 * creates a history: with no ORCH_DB_URL and no SQLite file there is none to show.
 */
import { existsSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { HistoryStore } from '../../history/history-store.ts';
import { describeTarget, historyTargetFromEnv, openHistory } from '../../history/open-history.ts';
import type { DashboardContext } from './dashboard-context.ts';

export interface DashboardHistory {
  /** where the history is (password masked) */
  where: string;
  /** null: no history recorded here yet */
  get(): Promise<HistoryStore | null>;
}

const opened = new WeakMap<DashboardContext, DashboardHistory & { close(): Promise<void> }>();

export function dashboardHistory(ctx: DashboardContext, app?: FastifyInstance): DashboardHistory {
  let h = opened.get(ctx);
  if (!h) {
    const target = historyTargetFromEnv();
    let store: Promise<HistoryStore> | null = null;
    h = {
      where: describeTarget(target),
      get: async () => {
        if (!target.url && !existsSync(target.file)) return null;
        store ??= openHistory(target).catch((err) => {
          store = null;
          throw err;
        });
        return store;
      },
      close: async () => void (await (await store?.catch(() => null))?.close()),
    };
    opened.set(ctx, h);
  }
  const close = h.close;
  app?.addHook('onClose', async () => close());
  return h;
}
