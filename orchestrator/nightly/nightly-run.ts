/**
 * One nightly run, start to end: claim (suite, scheduled time) in the history — the idempotency
 * key, so a stalled job retried elsewhere waits for the experiments the first attempt submitted
 * instead of submitting again — submit each spec through the ordinary submit path, wait for
 * every experiment, write results/<id>/ as `orch submit` does, record one row per comparison,
 * judge them against the nights before (night-findings.ts) and send the alerts. A spec that
 * stopped validating is that spec's failure (a not-run row, a `failed` alert); the others run.
 */
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { UserInputError } from '../../jobs/errors.ts';
import { loadSpec } from '../../jobs/load-spec.ts';
import type { HistoryStore, NightlyRow, RunState, SubmittedSpec } from '../../history/history-store.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { waitForEnd } from '../experiment/progress.ts';
import { submitExperiment } from '../experiment/submit.ts';
import { writeResults } from '../results/write-results.ts';
import type { AlertSend } from './alert-sinks.ts';
import { findings } from './night-findings.ts';
import { makeAlert } from './nightly-alert.ts';
import { notRunRow, rowsFromResults, type RowContext } from './night-rows.ts';
import { orchProvenance, specCommits } from './provenance.ts';
import type { NightlyJobData } from './nightly-suites.ts';

export interface NightContext {
  redis: Redis;
  prefix: string;
  history: HistoryStore;
  log: Logger;
  send: AlertSend;
  resultsRoot: string;
  heartbeatMs?: number;
}

export interface NightOutcome {
  run: string;
  state: RunState;
  /** false when another attempt had claimed this night: nothing was submitted */
  claimed: boolean;
  submitted: (SubmittedSpec & { hash: string })[];
  /** `file: error` of each spec that could not be submitted */
  rejected: string[];
  alerts: number;
}

export async function runNight(ctx: NightContext, data: NightlyJobData, scheduledAt: number): Promise<NightOutcome> {
  const prov = orchProvenance();
  const { claimed, run } = await ctx.history.claimRun({ suite: data.suite, scheduledAt, orchVersion: prov.version, orchCommit: prov.commit, serveHost: prov.host });
  const log = ctx.log.child({ suite: data.suite, run: run.id });
  if (!claimed && run.state !== 'running') {
    log.info({ state: run.state }, 'nightly: this night was already run; nothing submitted again');
    return { run: run.id, state: run.state, claimed, submitted: [], rejected: [], alerts: 0 };
  }
  const beat = setInterval(() => void ctx.history.heartbeat(run.id).catch(() => undefined), ctx.heartbeatMs ?? 30_000);
  try {
    const rows: NightlyRow[] = [];
    const submitted: NightOutcome['submitted'] = [];
    const rejected: string[] = [];
    const context = new Map<string, RowContext>();
    const base = { run_id: run.id, suite: data.suite, scheduled_at: scheduledAt };
    if (claimed) {
      for (const file of data.experiments) {
        try {
          const loaded = loadSpec(file);
          const sub = await submitExperiment({ redis: ctx.redis, prefix: ctx.prefix, loaded, specText: readFileSync(file, 'utf8') });
          submitted.push({ file, experiment: sub.id, hash: loaded.hash });
          context.set(file, { ...base, spec_file: file, spec_name: loaded.spec.name, spec_hash: loaded.hash, commits: specCommits(loaded.spec) });
          await ctx.history.setExperiments(run.id, submitted.map(({ file: f, experiment }) => ({ file: f, experiment })));
          log.info({ experiment: sub.id, file }, 'nightly: submitted');
        } catch (err) {
          if (!(err instanceof UserInputError)) throw err;
          rejected.push(`${file}: ${err.message}`);
          rows.push(notRunRow({ ...base, spec_file: file, spec_name: null, spec_hash: null, commits: {} }, null, `not submitted: ${err.message}`));
          log.error({ file, err }, 'nightly: spec not submitted');
        }
      }
    } else {
      log.warn({ experiments: run.experiments }, 'nightly: another attempt claimed this night and stopped; waiting for its experiments, submitting nothing');
      const exps = new ExperimentStore(ctx.redis, ctx.prefix);
      for (const s of run.experiments) {
        const exp = await exps.get(s.experiment);
        submitted.push({ ...s, hash: exp?.hash ?? '' });
        context.set(s.file, { ...base, spec_file: s.file, spec_name: exp?.name ?? null, spec_hash: exp?.hash ?? null, commits: exp ? specCommits(exp.spec) : {} });
      }
      for (const file of data.experiments.filter((f) => !run.experiments.some((s) => s.file === f))) {
        rows.push(notRunRow({ ...base, spec_file: file, spec_name: null, spec_hash: null, commits: {} }, null, 'not submitted: the attempt that claimed this night stopped before submitting it'));
      }
    }
    for (const s of submitted) rows.push(...(await collect(ctx, s, context.get(s.file)!, log)));
    const judged = findings(rows, await ctx.history.rows(data.suite));
    for (const alert of judged.alerts) {
      log.warn({ alert: alert.kind, spec: alert.spec }, alert.text);
      await ctx.send(alert);
    }
    const state: RunState = judged.rows.some((r) => r.experiment_state !== 'done') ? 'failed' : judged.rows.some((r) => r.gates_pass === false) ? 'invalid' : 'done';
    const errors = judged.rows.filter((r) => r.error).map((r) => `${r.spec_file}${r.arm ? ` (${r.arm} vs ${r.reference})` : ''}: ${r.error}`);
    await ctx.history.finishRun(run.id, { state, error: errors.length ? [...new Set(errors)].join('\n') : null, alerts: judged.alerts.length, rows: judged.rows });
    log.info({ state, rows: judged.rows.length, alerts: judged.alerts.length }, 'nightly: run recorded');
    return { run: run.id, state, claimed, submitted, rejected, alerts: judged.alerts.length };
  } catch (err) {
    // Whatever stopped the run is recorded and said: a night is never silently lost.
    const message = err instanceof Error ? err.message : String(err);
    await ctx.history.finishRun(run.id, { state: 'failed', error: message, alerts: 1, rows: [] }).catch((e) => log.error({ err: e }, 'nightly: could not record the failed run'));
    await ctx.send(failedNight(data, scheduledAt, message));
    throw err;
  } finally {
    clearInterval(beat);
  }
}

async function collect(ctx: NightContext, s: SubmittedSpec, rc: RowContext, log: Logger): Promise<NightlyRow[]> {
  try {
    const exp = await new ExperimentStore(ctx.redis, ctx.prefix).get(s.experiment);
    if (!exp) return [notRunRow(rc, s.experiment, `experiment ${s.experiment} is gone from Redis (restarted without its data?)`)];
    await waitForEnd(ctx.redis, ctx.prefix, exp);
    const written = await writeResults(ctx.redis, ctx.prefix, s.experiment, ctx.resultsRoot);
    return rowsFromResults(rc, s.experiment, written);
  } catch (err) {
    if (!(err instanceof UserInputError)) throw err;
    log.error({ experiment: s.experiment, err }, 'nightly: results could not be read');
    return [notRunRow(rc, s.experiment, err.message)];
  }
}

function failedNight(data: NightlyJobData, scheduledAt: number, message: string) {
  return makeAlert({
    kind: 'failed', suite: data.suite, spec: '(the whole suite)', spec_file: data.file, scheduled_at: new Date(scheduledAt).toISOString(),
    experiment: null, comparison: null, change: null, ci: null, commits: {}, results_dir: null,
    message: `the nightly run stopped: ${message}`,
  });
}
