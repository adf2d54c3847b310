/**
 * The consumer of queue `nightly`, run by `orch serve`: a suite run loads each of the suite's
 * specs again (a spec may have changed since install) and submits every valid one through the
 * ordinary submit path (experiment/submit.ts). A spec that became invalid, or that submit
 * refuses, never stops the others: they are submitted, then the job fails with each spec's error
 * and the ids that were submitted (NIGHTLY_SPECS_REJECTED, never retried: a retry would submit
 * the valid ones twice).
 * The job's return value lists the submitted experiments.
 */
import { readFileSync } from 'node:fs';
import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { UserInputError } from '../../jobs/errors.ts';
import { loadSpec } from '../../jobs/load-spec.ts';
import { submitExperiment } from '../experiment/submit.ts';
import { connectRedis } from '../../store/connect.ts';
import { toJobError } from '../../store/job-error.ts';
import { QUEUES } from '../../store/keys.ts';
import type { NightlyJobData } from './nightly-suites.ts';

export interface SubmittedFromSuite {
  file: string;
  experiment: string;
  hash: string;
}

export interface NightlyResult {
  suite: string;
  submitted: SubmittedFromSuite[];
}

/** Submits the suite run's experiments; throws (never retried) naming every spec that failed. */
export async function runSuite(redis: Redis, prefix: string, data: NightlyJobData, log: Logger): Promise<NightlyResult> {
  const submitted: SubmittedFromSuite[] = [];
  const failed: string[] = [];
  for (const file of data.experiments) {
    try {
      const loaded = loadSpec(file);
      const specText = readFileSync(file, 'utf8');
      const sub = await submitExperiment({ redis, prefix, loaded, specText });
      submitted.push({ file, experiment: sub.id, hash: loaded.hash });
      log.info({ suite: data.suite, experiment: sub.id, file }, 'nightly: submitted');
    } catch (err) {
      // A user's mistake in one spec (invalid, cannot ever run) is that spec's failure only.
      if (!(err instanceof UserInputError)) throw err;
      failed.push(`${file}: ${err.message}`);
      log.error({ suite: data.suite, file, err }, 'nightly: spec not submitted');
    }
  }
  if (failed.length > 0) {
    const ids = submitted.length > 0 ? submitted.map((s) => s.experiment).join(', ') : 'none';
    throw toJobError(new UserInputError(
      'NIGHTLY_SPECS_REJECTED',
      `suite ${data.suite} (${data.file}): ${failed.length} of ${data.experiments.length} specs not submitted (submitted: ${ids})\n${failed.join('\n')}`,
    ));
  }
  return { suite: data.suite, submitted };
}

/** One worker on `nightly` (concurrency 1); several `orch serve` each run one, a job runs once. */
export function startNightlyWorker(opts: { url: string; prefix: string; log: Logger }): { close(): Promise<void> } {
  const log = opts.log.child({ component: 'nightly' });
  const redis = connectRedis(opts.url, { log, name: 'orch-nightly-submit' });
  const blocking = connectRedis(opts.url, { log, name: 'orch-nightly' });
  const worker = new Worker<NightlyJobData, NightlyResult>(
    QUEUES.nightly,
    (job: Job<NightlyJobData>) => runSuite(redis, opts.prefix, job.data, log),
    { connection: blocking, prefix: opts.prefix, concurrency: 1 },
  );
  worker.on('error', (err) => log.error({ err }, 'nightly worker error'));
  return {
    close: async () => {
      await worker.close();
      blocking.disconnect();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
