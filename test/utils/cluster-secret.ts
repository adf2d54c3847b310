/**
 * One cluster secret for every test's schedulers, dispatchers and workers (jobs/grant.ts): set in
 * this process's environment on import, so in-process dispatchers and every spawned `orch serve`
 * and `orch worker` (they inherit the environment) sign and verify with the same one.
 */
import { randomBytes } from 'node:crypto';
import { SECRET_ENV } from '../../store/cluster-secret.ts';

process.env[SECRET_ENV] ??= randomBytes(32).toString('hex');

export const TEST_CLUSTER_SECRET = Buffer.from(process.env[SECRET_ENV]!, 'utf8');

// The fixture rank (test/fixtures/ranks/rank.mjs) is told how to misbehave by FIXTURE_* variables
// set on the worker; a worker passes a rank only the variables its operator names (program-env.ts).
process.env.ORCH_RANK_ENV ??= 'FIXTURE_*';

// One submit token for every test's submitters and schedulers (jobs/submit-signature.ts), as for
// the cluster secret: in-process submits and schedulers and every spawned orch inherit it.
process.env.ORCH_SUBMIT_TOKEN ??= randomBytes(32).toString('hex');
export const TEST_SUBMIT_TOKEN = Buffer.from(process.env.ORCH_SUBMIT_TOKEN, 'utf8');
