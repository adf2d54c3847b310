/**
 * The consumer of queue `nightly`, run by `orch serve`: each job is one night of one suite
 * (nightly-run.ts: submit, wait, write results, record in the history, alert). A job runs only
 * when its suite's signed scheduler made it (nightly-grant.ts); any other is refused before a
 * file is read, counted (store/refused-jobs.ts) and logged by its id alone. The night's
 * scheduled time comes from the scheduler's job id, so a stalled job taken over by another
 * `orch serve` maps to the same history row and never submits twice. A spec that stopped
 * validating is recorded as that spec's failed night, the others run; the job then fails with
 * each spec's error (NIGHTLY_SPECS_REJECTED, never retried).
 */
import { type Job, Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { HistoryStore } from '../../history/history-store.ts';
import { openHistory } from '../../history/open-history.ts';
import { OrchError, UserInputError } from '../../jobs/errors.ts';
import { connectRedis } from '../../store/connect.ts';
import { loggableJobId } from '../../store/job-admission.ts';
import { toJobError } from '../../store/job-error.ts';
import { QUEUES } from '../../store/keys.ts';
import { RefusedJobs } from '../../store/refused-jobs.ts';
import { alertRoots } from './alert-file.ts';
import { alertSinks } from './alert-sinks.ts';
import { admitNightlyJob } from './nightly-grant.ts';
import { type NightContext, type NightOutcome, runNight } from './nightly-run.ts';
import { NIGHTLY_JOB, type NightlyJobData, resultsRootOf } from './nightly-suites.ts';

export type NightlyResult = NightOutcome & { suite: string };

export async function runSuiteJob(
  base: Omit<NightContext, 'send' | 'resultsRoot'>,
  data: NightlyJobData,
  at: number,
): Promise<NightlyResult> {
  const resultsRoot = resultsRootOf(data);
  const ctx: NightContext = {
    ...base,
    resultsRoot,
    send: alertSinks(
      {
        webhooks: [data.alerts?.webhook, process.env.ORCH_ALERT_WEBHOOK].filter((u): u is string => !!u),
        file: data.alerts?.file ?? null,
        roots: alertRoots(resultsRoot),
      },
      base.log,
    ),
  };
  const out = await runNight(ctx, data, at);
  if (out.rejected.length > 0) {
    const ids = out.submitted.length > 0 ? out.submitted.map((s) => s.experiment).join(', ') : 'none';
    throw toJobError(
      new UserInputError(
        'NIGHTLY_SPECS_REJECTED',
        `suite ${data.suite} (${data.file}): ${out.rejected.length} of ${data.experiments.length} specs not submitted (submitted: ${ids})\n${out.rejected.join('\n')}`,
        {
          hint: `the night is recorded as failed (orch nightly status ${data.suite}); fix the spec, the next night validates it again`,
        },
      ),
    );
  }
  return { suite: data.suite, ...out };
}

/** One worker on `nightly` (concurrency 1); several `orch serve` each run one, a job runs once. */
export function startNightlyWorker(opts: {
  url: string;
  prefix: string;
  log: Logger /** the cluster secret suites are signed with at install */;
  secret: Buffer;
  submitToken?: Buffer;
}): { close(): Promise<void> } {
  const log = opts.log.child({ component: 'nightly' });
  const redis = connectRedis(opts.url, { log, name: 'orch-nightly-submit' });
  const blocking = connectRedis(opts.url, { log, name: 'orch-nightly' });
  const refused = new RefusedJobs(redis, opts.prefix);
  let history: Promise<HistoryStore> | null = null;
  // Opened at the first night, and again after a failure: the database may come up later than orch serve.
  const openOnce = () =>
    (history ??= openHistory().catch((err) => {
      history = null;
      throw err;
    }));
  const worker = new Worker<NightlyJobData, NightlyResult>(
    QUEUES.nightly,
    async (job: Job<NightlyJobData>) => {
      const admitted = admitNightlyJob(job, opts.secret, NIGHTLY_JOB);
      if (!admitted.ok) {
        const id = loggableJobId(job.id);
        await refused
          .count('nightly', 'NIGHTLY_JOB_REFUSED')
          .catch((err: unknown) => log.warn({ err }, 'could not count a refused nightly job'));
        log.error(
          { job: id, code: 'NIGHTLY_JOB_REFUSED', why: admitted.why },
          "refused a nightly job its suite's signed scheduler did not make: nothing ran",
        );
        throw toJobError(
          new OrchError('NIGHTLY_JOB_REFUSED', `nightly job ${id} refused: ${admitted.why}; nothing ran`),
        );
      }
      return runSuiteJob(
        {
          redis,
          prefix: opts.prefix,
          history: openOnce,
          log,
          ...(opts.submitToken ? { submitToken: opts.submitToken } : {}),
        },
        job.data,
        admitted.scheduledAt,
      );
    },
    { connection: blocking, prefix: opts.prefix, concurrency: 1 },
  );
  worker.on('error', (err) => log.error({ err }, 'nightly worker error'));
  // the job's id only: a refused job's data is whoever wrote it, never logged
  worker.on('failed', (job, err) => log.error({ job: loggableJobId(job?.id), err: err.message }, 'nightly run failed'));
  return {
    close: async () => {
      await worker.close();
      blocking.disconnect();
      await redis.quit().catch(() => redis.disconnect());
      if (history) await (await history.catch(() => null))?.close();
    },
  };
}
