/**
 * Where alerts go: a webhook (POST JSON with a Slack-compatible `text`, retried with backoff,
 * every failure logged) and a file of JSON lines (only under the allowed roots, never through a
 * link: alert-file.ts), or stdout for `-`. A sink that fails never
 * fails the nightly run: the run is recorded either way and the log says what was lost.
 */
import type { Logger } from 'pino';
import { messageOf } from '../../jobs/message-of.ts';
import { redactUrl } from '../../jobs/redact.ts';
import { appendAlertLine } from './alert-file.ts';
import type { NightlyAlert } from './nightly-alert.ts';

export interface AlertSinksConfig {
  webhooks: string[];
  /** absolute path, or `-` for stdout */
  file: string | null;
  /** the directories `file` must be under (alert-file.ts alertRoots) */
  roots: string[];
  /** webhook attempts and the first backoff (doubled after each failure) */
  attempts?: number;
  backoffMs?: number;
  timeoutMs?: number;
}

export type AlertSend = (alert: NightlyAlert) => Promise<void>;

export function alertSinks(cfg: AlertSinksConfig, log: Logger): AlertSend {
  return async (alert) => {
    if (cfg.file === '-') process.stdout.write(`${JSON.stringify(alert)}\n`);
    else if (cfg.file) {
      try {
        appendAlertLine(cfg.file, cfg.roots, `${JSON.stringify(alert)}\n`);
      } catch (err) {
        log.error(
          { err, file: cfg.file, alert: alert.text },
          'nightly alert: could not append to the alert file; the alert is only in this log',
        );
      }
    }
    await Promise.all(cfg.webhooks.map((url) => postWithRetry(url, alert, cfg, log)));
  };
}

async function postWithRetry(url: string, alert: NightlyAlert, cfg: AlertSinksConfig, log: Logger): Promise<void> {
  const attempts = cfg.attempts ?? 5;
  let wait = cfg.backoffMs ?? 500;
  const where = redactUrl(url);
  for (let i = 1; i <= attempts; i++) {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(alert),
        signal: AbortSignal.timeout(cfg.timeoutMs ?? 10_000),
      });
      if (res.ok) return;
      throw new Error(`HTTP ${res.status} ${res.statusText}`);
    } catch (err) {
      const last = i === attempts;
      log.warn(
        { webhook: where, attempt: i, of: attempts, err: messageOf(err) },
        last
          ? 'nightly alert: webhook failed every attempt; the alert is only in this log and the history'
          : `nightly alert: webhook failed, retrying in ${wait} ms`,
      );
      if (last) {
        log.error({ webhook: where, alert: alert.text }, 'nightly alert not delivered');
        return;
      }
      await new Promise((r) => setTimeout(r, wait));
      wait *= 2;
    }
  }
}
