/**
 * `orch nightly run SUITE`: one night of an installed suite, now, in this process — the night
 * `orch serve` would run at the suite's next time (nightly-processor.ts runSuiteJob: submit every
 * spec to the cluster, wait, write results, record the night in the history, alert), from the
 * template `orch nightly install` signed. The template is verified with the cluster secret first
 * (nightly-grant.ts), as orch serve verifies each night's job: nothing unsigned runs. The night's
 * time is now; its claim (store/nightly-claims.ts) keeps it from running twice.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { openHistory } from '../../history/open-history.ts';
import { UserInputError } from '../../jobs/errors.ts';
import { verifyNightlyTemplate } from './nightly-grant.ts';
import { type NightlyResult, runSuiteJob } from './nightly-processor.ts';
import { NightlySuites } from './nightly-suites.ts';

export interface NightNowInput {
  redis: Redis;
  prefix: string;
  suite: string;
  /** the cluster secret the suite was signed with at install */
  secret: Buffer;
  submitToken: Buffer;
  log: Logger;
}

export async function runNightNow(o: NightNowInput): Promise<NightlyResult> {
  const suites = new NightlySuites(o.redis, o.prefix);
  const data = await suites.template(o.suite).finally(() => suites.close());
  if (!data)
    throw new UserInputError('NO_SUCH_SUITE', `no nightly suite named "${o.suite}" is installed`, {
      hint: 'orch nightly list shows the installed names; orch nightly install SUITE.yaml installs one',
    });
  const signed = verifyNightlyTemplate(data, o.secret);
  if (!signed.ok) {
    throw new UserInputError(
      'CLUSTER_SECRET',
      `nightly suite "${o.suite}" was not signed with this cluster secret: ${signed.why}`,
      {
        hint: 'give orch nightly run the secret orch serve has (--secret-file FILE or ORCH_CLUSTER_SECRET), or install the suite again with it',
      },
    );
  }
  const history = await openHistory();
  try {
    return await runSuiteJob(
      { redis: o.redis, prefix: o.prefix, history, log: o.log, submitToken: o.submitToken },
      data,
      Date.now(),
    );
  } finally {
    await history.close();
  }
}
