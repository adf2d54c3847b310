/**
 * One nightly run, start to end: claim (suite, scheduled time) — a Redis SET NX key, then the
 * history's unique row — so a stalled job retried elsewhere, or two processors racing for one
 * night, never submit twice: the other attempt waits while the claimant's heartbeat is fresh and
 * then takes over the experiments it recorded (each recorded before it is submitted). Submit
 * each spec through the ordinary submit path (a paired entry first gets tonight's and the last
 * good night's commits as its two builds, paired-night.ts), wait for
 * every experiment, write results/<id>/ as `orch submit` does, record one row per comparison,
 * judge them against the nights before (night-findings.ts; on the same Slurm nodes unless the
 * spec allows a node change, node-change.ts), run each suspected regression's
 * experiment again before it may alert (confirm-regressions.ts) and send the alerts. A spec that
 * stopped validating is that spec's failure (a not-run row, a `failed` alert); the others run.
 * Every history read and write is retried while the database is away (night-history.ts); one
 * that still fails ends the night with an alert naming the database and the fix, and the reason
 * is left beside the claim in Redis, so the next night that claims ends the stalled run `failed`
 * with it once the database answers again: no night is left `running`.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import {
  type NightlyRow,
  type NightlyRun,
  type RunState,
  runId,
  type SubmittedSpec,
} from '../../history/history-store.ts';
import { codeOf } from '../../jobs/error-codes.ts';
import { UserInputError } from '../../jobs/errors.ts';
import { allowsNodeChange } from '../../jobs/spec-schema/across-runs.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { NightlyClaims } from '../../store/nightly-claims.ts';
import { requireSubmitToken } from '../../store/submit-token.ts';
import { awaitResults } from '../experiment/run-experiment.ts';
import { submitExperiment } from '../experiment/submit.ts';
import { orchProvenance, specCommits } from '../report/orch-provenance.ts';
import { loadSpec } from '../spec/load-spec.ts';
import type { AlertSend } from './alert-sinks.ts';
import { confirmRegressions } from './confirm-regressions.ts';
import { contentFreeReason } from './content-free-reason.ts';
import { NIGHTLY_HEARTBEAT_MS, staleAfter } from './heartbeat.ts';
import { findings } from './night-findings.ts';
import { HISTORY_RETRY, type HistoryRetry, type HistorySource, NightHistory } from './night-history.ts';
import { notRunRow, type RowContext, rowsFromResults } from './night-rows.ts';
import { makeAlert } from './nightly-alert.ts';
import type { NightlyJobData } from './nightly-suites.ts';
import { lastGoodCommit, pairedCommits, pairSpec } from './paired-night.ts';
import { rerunRefusal } from './rerun-refusal.ts';

export interface NightContext {
  redis: Redis;
  prefix: string;
  history: HistorySource;
  log: Logger;
  send: AlertSend;
  resultsRoot: string;
  heartbeatMs?: number;
  /** how each history read and write is retried (default HISTORY_RETRY: 5 tries over 30 s) */
  historyRetry?: HistoryRetry;
  /** the submit token the night's experiments are signed with (default: from the environment, store/submit-token.ts) */
  submitToken?: Buffer;
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
  /** the rows this attempt recorded (none when another attempt ran the night) */
  rows: NightlyRow[];
}

/** What a night reads of its job: the admitted template data, less its schedule and grant. */
export type NightData = Omit<NightlyJobData, 'schedule' | 'grant'>;

/** Whether this attempt holds its night (its claim, or a takeover): only then does it record the night's end. */
interface NightState {
  owns: boolean;
}

export async function runNight(ctx: NightContext, data: NightData, scheduledAt: number): Promise<NightOutcome> {
  const log = ctx.log.child({ suite: data.suite, run: runId(data.suite, scheduledAt) });
  const history = new NightHistory(ctx.history, ctx.historyRetry ?? HISTORY_RETRY, log);
  const night: NightState = { owns: false };
  try {
    return await runHeldNight(ctx, history, data, scheduledAt, night, log);
  } catch (err) {
    // Whatever stopped the run is said first (the alert sink needs no database) and then
    // recorded: a night is never silently lost.
    const message = contentFreeReason(err);
    await ctx
      .send(failedNight(data, scheduledAt, message))
      .catch((e) => log.error({ err: e }, 'nightly: the failed night could not be alerted'));
    await recordFailure(ctx, history, data.suite, scheduledAt, message, night, isHistoryFault(err), log);
    throw err;
  }
}

function isHistoryFault(err: unknown): boolean {
  const code = codeOf(err);
  return code === 'HISTORY_UNAVAILABLE' || code === 'HISTORY_UNUSABLE';
}

/**
 * The failed night in the history (retried like every write) and, when the history is what
 * failed, its reason in Redis beside the claim: the night that ends this run later says why.
 */
async function recordFailure(
  ctx: NightContext,
  history: NightHistory,
  suite: string,
  scheduledAt: number,
  message: string,
  night: NightState,
  historyFault: boolean,
  log: Logger,
): Promise<void> {
  if (historyFault && night.owns) {
    await new NightlyClaims(ctx.redis, ctx.prefix)
      .recordFault(suite, scheduledAt, message)
      .catch((e) => log.error({ err: e }, 'nightly: the history fault could not be kept in Redis either'));
  }
  if (!night.owns) return;
  const id = runId(suite, scheduledAt);
  await history
    .op('record the night as failed', (h) => h.finishRun(id, { state: 'failed', error: message, alerts: 1, rows: [] }))
    .catch((e) =>
      log.error({ err: e }, 'nightly: could not record the failed run; the next night of this suite ends it as failed'),
    );
}

async function runHeldNight(
  ctx: NightContext,
  history: NightHistory,
  data: NightData,
  scheduledAt: number,
  night: NightState,
  log: Logger,
): Promise<NightOutcome> {
  const heartbeatMs = ctx.heartbeatMs ?? NIGHTLY_HEARTBEAT_MS;
  const { claimed, run: found } = await claimNight(ctx, history, data.suite, scheduledAt, heartbeatMs, night);
  let run = found;
  if (!claimed && run.state === 'running') run = await whileAlive(history, run, heartbeatMs);
  if (!claimed && run.state !== 'running') {
    log.info({ state: run.state }, 'nightly: this night was run by another attempt; nothing submitted again');
    return { run: run.id, state: run.state, claimed, submitted: [], rejected: [], alerts: 0, rows: [] };
  }
  night.owns = true;
  const beat = setInterval(() => void history.beat(run.id), heartbeatMs);
  try {
    if (claimed) await endStalledNights(ctx, history, run, heartbeatMs, log);
    const rows: NightlyRow[] = [];
    const submitted: NightOutcome['submitted'] = [];
    const rejected: string[] = [];
    const context = new Map<string, RowContext>();
    // each spec's across_runs.allow_node_change, as registered (the findings judge its rows by it)
    const nodePolicy = new Map<string, boolean>();
    const base = { run_id: run.id, suite: data.suite, scheduled_at: scheduledAt };
    const before = await history.op("read the suite's earlier nights", (h) => h.rows(data.suite));
    const paired = (file: string) => data.paired?.find((p) => p.file === file);
    if (claimed) {
      const intents: SubmittedSpec[] = [];
      for (const file of data.experiments) {
        try {
          let loaded = loadSpec(file);
          let extra: Pick<RowContext, 'commits' | 'pairing'> = { commits: specCommits(loaded.spec), pairing: null };
          const pair = paired(file);
          if (pair) {
            const p = pairSpec(loaded, lastGoodCommit(before, file), pair.ref);
            loaded = p.loaded;
            extra = { commits: p.commits, pairing: p.pairing };
          }
          // The intent is recorded before the submit: an attempt that dies in between leaves an
          // id a retry finds in Redis (and waits for) or not (never submitted), never an orphan.
          const id = await new ExperimentStore(ctx.redis, ctx.prefix).newId(loaded.spec.name);
          intents.push({ file, experiment: id });
          await history.op(`record experiment ${id} before submitting it`, (h) => h.setExperiments(run.id, intents));
          try {
            await submitExperiment({
              redis: ctx.redis,
              prefix: ctx.prefix,
              loaded,
              id,
              ...(ctx.submitToken ? { submitToken: ctx.submitToken } : {}),
            });
          } catch (err) {
            intents.pop();
            await history.op(`record that experiment ${id} was not submitted`, (h) =>
              h.setExperiments(run.id, intents),
            );
            throw err;
          }
          submitted.push({ file, experiment: id, hash: loaded.hash });
          nodePolicy.set(file, allowsNodeChange(loaded.spec));
          context.set(file, {
            ...base,
            spec_file: file,
            spec_name: loaded.spec.name,
            spec_hash: loaded.hash,
            ...extra,
          });
          log.info(
            { experiment: id, file, ...(extra.pairing ? { pairing: extra.pairing } : {}) },
            'nightly: submitted',
          );
        } catch (err) {
          if (!(err instanceof UserInputError)) throw err;
          // what reaches Redis, the history, the alerts and this log names the file, never its lines
          const reason = contentFreeReason(err);
          rejected.push(`${file}: ${reason}`);
          rows.push(
            notRunRow(
              { ...base, spec_file: file, spec_name: null, spec_hash: null, commits: {}, pairing: null },
              null,
              `not submitted: ${reason}`,
            ),
          );
          log.error({ file, code: err.code, reason }, 'nightly: spec not submitted');
        }
      }
    } else {
      log.warn(
        { experiments: run.experiments },
        'nightly: the attempt that claimed this night stopped; waiting for the experiments it submitted, submitting nothing',
      );
      const exps = new ExperimentStore(ctx.redis, ctx.prefix);
      for (const s of run.experiments) {
        const exp = await exps.get(s.experiment);
        const rc: RowContext = {
          ...base,
          spec_file: s.file,
          spec_name: exp?.name ?? null,
          spec_hash: exp?.hash ?? null,
          commits: exp ? (paired(s.file) ? pairedCommits(exp.spec) : specCommits(exp.spec)) : {},
          pairing:
            exp && paired(s.file)
              ? `paired by the attempt that submitted it: ${JSON.stringify(pairedCommits(exp.spec))}`
              : null,
        };
        if (exp) {
          submitted.push({ ...s, hash: exp.hash });
          nodePolicy.set(s.file, allowsNodeChange(exp.spec));
          context.set(s.file, rc);
        } else {
          rows.push(
            notRunRow(
              rc,
              s.experiment,
              `not submitted: the attempt that claimed this night stopped before submitting experiment ${s.experiment}`,
            ),
          );
        }
      }
      for (const file of data.experiments.filter((f) => !run.experiments.some((s) => s.file === f))) {
        rows.push(
          notRunRow(
            { ...base, spec_file: file, spec_name: null, spec_hash: null, commits: {}, pairing: null },
            null,
            'not submitted: the attempt that claimed this night stopped before submitting it',
          ),
        );
      }
    }
    for (const s of submitted) rows.push(...(await collect(ctx, s, context.get(s.file)!, log)));
    const judged = await confirmRegressions(
      findings(rows, before, data.false_discovery_rate, (file) => nodePolicy.get(file) === true),
      (suspect) => confirmationRun(ctx, suspect, log),
    );
    for (const alert of judged.alerts) {
      log.warn({ alert: alert.kind, spec: alert.spec }, alert.text);
      await ctx.send(alert);
    }
    const state: RunState = judged.rows.some((r) => r.experiment_state !== 'done')
      ? 'failed'
      : judged.rows.some((r) => r.gates_pass === false)
        ? 'invalid'
        : 'done';
    const errors = judged.rows
      .filter((r) => r.error)
      .map((r) => `${r.spec_file}${r.arm ? ` (${r.arm} vs ${r.reference})` : ''}: ${r.error}`);
    await history.op(`record the night's ${judged.rows.length} rows and its end (${state})`, (h) =>
      h.finishRun(run.id, {
        state,
        error: errors.length ? [...new Set(errors)].join('\n') : null,
        alerts: judged.alerts.length,
        rows: judged.rows,
      }),
    );
    log.info({ state, rows: judged.rows.length, alerts: judged.alerts.length }, 'nightly: run recorded');
    return { run: run.id, state, claimed, submitted, rejected, alerts: judged.alerts.length, rows: judged.rows };
  } finally {
    clearInterval(beat);
  }
}

/**
 * Who runs this night: the attempt that takes the Redis key (store/nightly-claims.ts) and then
 * inserts the history's row. One that finds the key taken does not insert: it waits for the
 * holder's row, and if none comes within the staleness window the holder died before writing it
 * — the night is then recorded as failed here, so it is never silently lost.
 */
async function claimNight(
  ctx: NightContext,
  history: NightHistory,
  suite: string,
  scheduledAt: number,
  heartbeatMs: number,
  night: NightState,
): Promise<{ claimed: boolean; run: NightlyRun }> {
  const prov = orchProvenance();
  const claim = {
    suite,
    scheduledAt,
    orchVersion: prov.version,
    orchCommit: prov.commit,
    orchDirty: prov.dirty,
    serveHost: prov.host,
  };
  const claims = new NightlyClaims(ctx.redis, ctx.prefix);
  if (await claims.claim(suite, scheduledAt, `${prov.host}/${process.pid}/${randomBytes(4).toString('hex')}`)) {
    // Held from here: a history that fails the row's insert leaves its reason for whoever ends the night.
    night.owns = true;
    const held = await history.op('claim the night (insert its run)', (h) => h.claimRun(claim));
    night.owns = held.claimed;
    return held;
  }
  const id = runId(suite, scheduledAt);
  const until = Date.now() + staleAfter(heartbeatMs);
  for (;;) {
    const run = await history.op('read the run of the attempt that claimed this night', (h) => h.run(id));
    if (run) return { claimed: false, run };
    if (Date.now() > until) break;
    await sleep(Math.min(1000, heartbeatMs));
  }
  const { claimed, run } = await history.op('claim the night (insert its run)', (h) => h.claimRun(claim));
  if (!claimed) return { claimed: false, run };
  const fault = await claims.fault(suite, scheduledAt);
  const error =
    fault ??
    'another attempt took this night in Redis but never recorded it (it stopped before writing its run); nothing was submitted';
  await history.op('record the night as failed', (h) =>
    h.finishRun(run.id, { state: 'failed', error, alerts: 0, rows: [] }),
  );
  return { claimed: false, run: (await history.op('read the run', (h) => h.run(run.id)))! };
}

/** Waits while the run's own attempt is alive (its heartbeat fresh); returns the run as it ended or went stale. */
async function whileAlive(history: NightHistory, run: NightlyRun, heartbeatMs: number): Promise<NightlyRun> {
  let r = run;
  while (r.state === 'running' && Date.now() - r.heartbeat_at < staleAfter(heartbeatMs)) {
    await sleep(Math.min(1000, heartbeatMs));
    r = (await history.op('read the run of the attempt that claimed this night', (h) => h.run(r.id))) ?? r;
  }
  return r;
}

/**
 * Ends the suite's earlier runs whose attempt is gone — still `running`, heartbeat older than the
 * staleness window — as failed, with the reason their attempt left in Redis when the history
 * would not take it (its database was down), else with what is known: when and where it last
 * beat. Guarded in SQL (HistoryStore.endStale): an attempt that beats again is left alone.
 */
async function endStalledNights(
  ctx: NightContext,
  history: NightHistory,
  own: NightlyRun,
  heartbeatMs: number,
  log: Logger,
): Promise<void> {
  const staleBefore = Date.now() - staleAfter(heartbeatMs);
  const stalled = (
    await history.op('read the stalled runs of this suite', (h) => h.stalled(own.suite, staleBefore))
  ).filter((r) => r.id !== own.id);
  const claims = new NightlyClaims(ctx.redis, ctx.prefix);
  for (const r of stalled) {
    const why =
      (await claims.fault(r.suite, r.scheduled_at)) ??
      `its attempt stopped beating at ${new Date(r.heartbeat_at).toISOString()}${r.serve_host ? ` on ${r.serve_host}` : ''} (its orch serve stopped) and nothing recorded its end`;
    const error = `${why}\n(ended as failed by the run ${own.id}, which found it stalled)`;
    if (await history.op(`end the stalled run ${r.id}`, (h) => h.endStale(r.id, staleBefore, error))) {
      log.warn({ stalled: r.id, error }, 'nightly: an earlier night was left running; ended it as failed');
    }
  }
}

async function collect(ctx: NightContext, s: SubmittedSpec, rc: RowContext, log: Logger): Promise<NightlyRow[]> {
  try {
    if (!(await new ExperimentStore(ctx.redis, ctx.prefix).get(s.experiment)))
      return [
        notRunRow(rc, s.experiment, `experiment ${s.experiment} is gone from Redis (restarted without its data?)`),
      ];
    const { written } = await awaitResults(ctx.redis, ctx.prefix, s.experiment, { resultsRoot: ctx.resultsRoot });
    return rowsFromResults(rc, s.experiment, written);
  } catch (err) {
    if (!(err instanceof UserInputError)) throw err;
    log.error({ experiment: s.experiment, err }, 'nightly: results could not be read');
    return [notRunRow(rc, s.experiment, err.message)];
  }
}

/**
 * The suspect's experiment submitted again as it was registered (its spec text, hash, builds and
 * so card class), waited for and read into rows like the night's own — only when the record read
 * back from Redis is still the one the night submitted (rerun-refusal.ts); else a not-run row
 * naming the change, so the regression is alerted saying why it was not confirmed.
 */
async function confirmationRun(ctx: NightContext, suspect: NightlyRow, log: Logger): Promise<NightlyRow[]> {
  const { run_id, suite, scheduled_at, spec_file, spec_name, spec_hash, commits, pairing } = suspect;
  const rc: RowContext = { run_id, suite, scheduled_at, spec_file, spec_name, spec_hash, commits, pairing };
  const store = new ExperimentStore(ctx.redis, ctx.prefix);
  const exp = suspect.experiment === null ? null : await store.get(suspect.experiment);
  if (!exp)
    return [
      notRunRow(rc, null, `confirmation not run: experiment ${suspect.experiment ?? '(none)'} is gone from Redis`),
    ];
  const token = ctx.submitToken ?? requireSubmitToken('the nightly confirmation run');
  // the record is read back from Redis: run again only as the night submitted it (rerun-refusal.ts)
  const changed = rerunRefusal(exp, spec_hash, token);
  if (changed !== null) {
    log.error({ experiment: exp.id, confirms: suspect.experiment }, `nightly: ${changed}`);
    return [notRunRow(rc, null, `confirmation not run: ${changed}`)];
  }
  const id = await store.newId(exp.name);
  try {
    await submitExperiment({
      redis: ctx.redis,
      prefix: ctx.prefix,
      loaded: { file: exp.file || spec_file, text: exp.specText, spec: exp.spec, hash: exp.hash },
      id,
      submitToken: token,
    });
  } catch (err) {
    if (!(err instanceof UserInputError)) throw err;
    return [notRunRow(rc, null, `confirmation not submitted: ${contentFreeReason(err)}`)];
  }
  log.warn(
    { experiment: id, confirms: suspect.experiment, comparison: `${suspect.arm} vs ${suspect.reference}` },
    'nightly: suspected regression; confirmation run submitted',
  );
  return collect(ctx, { file: spec_file, experiment: id }, rc, log);
}

function failedNight(data: NightData, scheduledAt: number, message: string) {
  return makeAlert({
    kind: 'failed',
    suite: data.suite,
    spec: '(the whole suite)',
    spec_file: data.file,
    scheduled_at: new Date(scheduledAt).toISOString(),
    experiment: null,
    comparison: null,
    change: null,
    ci: null,
    commits: {},
    results_dir: null,
    message: `the nightly run stopped: ${message}`,
  });
}
