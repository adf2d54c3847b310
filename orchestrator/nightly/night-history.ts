/**
 * The history as one night uses it (nightly-run.ts): opened at first use, every read and write
 * tried again with a doubling back-off while the database does not answer or stays locked (a
 * PostgreSQL restart, another process inside a SQLite write transaction), and refused at once
 * when retrying cannot help (history/db-fault.ts: a file that is not SQLite, a login refused).
 * What is left after the last try is one OrchError — HISTORY_UNAVAILABLE or HISTORY_UNUSABLE —
 * naming the database (password masked), what the night was doing, the database's reason and
 * the fix: the text the night's alert and the BullMQ job's failedReason carry.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { type DbFault, dbFault } from '../../history/db-fault.ts';
import type { HistoryStore } from '../../history/history-store.ts';
import { codeOf } from '../../jobs/error-codes.ts';
import { OrchError } from '../../jobs/errors.ts';
import { messageOf } from '../../jobs/message-of.ts';
import { redactText } from '../../jobs/redact.ts';

export interface HistoryRetry {
  /** tries of one read or write, the first included (at least 1) */
  attempts: number;
  /** the wait after the first failed try, doubled after each */
  firstDelayMs: number;
}

/** 5 tries over 2 + 4 + 8 + 16 = 30 s: a PostgreSQL restart or a short lock is ridden out. */
export const HISTORY_RETRY: HistoryRetry = { attempts: 5, firstDelayMs: 2000 };

/** The history, or how to open it: a night that cannot open it fails and alerts like one that cannot write. */
export type HistorySource = HistoryStore | (() => Promise<HistoryStore>);

export class NightHistory {
  private store: HistoryStore | null;
  private beatFailing = false;

  constructor(
    private readonly source: HistorySource,
    private readonly retry: HistoryRetry,
    private readonly log: Logger,
  ) {
    this.store = typeof source === 'function' ? null : source;
  }

  /** `fn` on the history, retried while the fault is transient; `what` completes "could not …". */
  async op<T>(what: string, fn: (h: HistoryStore) => Promise<T>): Promise<T> {
    const started = Date.now();
    const attempts = Math.max(1, Math.floor(this.retry.attempts));
    let wait = this.retry.firstDelayMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn(await this.open());
      } catch (err) {
        const { fault, text } = this.describe(err);
        if (!fault.transient || attempt >= attempts) {
          const tries = fault.transient
            ? ` after ${attempt} tries over ${((Date.now() - started) / 1000).toFixed(1)} s`
            : ' (not retried: waiting cannot fix it)';
          throw new OrchError(
            fault.transient ? 'HISTORY_UNAVAILABLE' : 'HISTORY_UNUSABLE',
            `nightly history: could not ${what}${tries}: ${text}`,
            { hint: fault.fix, cause: err },
          );
        }
        this.log.warn(
          { what, attempt, of: attempts, err: text },
          `nightly history: could not ${what}; trying again in ${wait} ms`,
        );
        await sleep(wait);
        wait *= 2;
      }
    }
  }

  /**
   * One heartbeat, never retried and never thrown: the next beat is its retry, and a night whose
   * database is away goes on (its end is recorded, or alerted, by the retried writes). A failing
   * streak is logged at its start and at its end.
   */
  async beat(id: string): Promise<void> {
    try {
      await (await this.open()).heartbeat(id);
      if (this.beatFailing) this.log.info({ run: id }, 'nightly history: the heartbeat is written again');
      this.beatFailing = false;
    } catch (err) {
      if (!this.beatFailing)
        this.log.warn(
          { run: id, err: this.describe(err).text },
          'nightly history: the heartbeat could not be written; trying again at the next beat',
        );
      this.beatFailing = true;
    }
  }

  private async open(): Promise<HistoryStore> {
    if (!this.store && typeof this.source === 'function') this.store = await this.source();
    return this.store!;
  }

  private describe(err: unknown): { fault: DbFault; text: string } {
    if (this.store) {
      const fault = dbFault(err, this.store.db);
      return { fault, text: `the history database ${this.store.where} ${fault.reason}: ${fault.fix}` };
    }
    // Not opened: openHistory's own message names the database, the reason and the fix.
    const cause = err instanceof Error ? err.cause : undefined;
    const code = (cause as { code?: unknown } | undefined)?.code;
    const fault = dbFault(err, {
      engine: typeof code === 'string' && code.startsWith('SQLITE_') ? 'sqlite' : 'postgres',
      where: '',
    });
    // orch's own refusal with no driver error under it (a schema newer than this orch) stays refused.
    if (codeOf(err) !== null && cause === undefined) fault.transient = false;
    return { fault, text: redactText(messageOf(err)) };
  }
}
