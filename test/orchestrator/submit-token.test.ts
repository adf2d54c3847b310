/**
 * Who may submit: the scheduler acts only on an experiment its submitter signed with the submit
 * token (jobs/submit-signature.ts, orchestrator/scheduler/submit-admission.ts), a credential
 * distinct from the Redis password and the cluster secret. On a real `orch serve` and
 * `orch worker` (fixture ranks):
 *
 * - `orch submit` with no token: refused before it connects, exit 2, nothing registered;
 * - `orch submit` with a wrong token: the scheduler fails the experiment with SUBMIT_UNAUTHORIZED
 *   before any grant (no rank starts, no attempt), and submit exits 2;
 * - a record registered without a signature (anyone who can write to Redis) or signed and then
 *   altered: failed the same way, no rank starts;
 * - control: the token orch serve holds runs it to done.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { submitExperiment } from '../../orchestrator/experiment/submit.ts';
import { loadSpec } from '../../orchestrator/spec/load-spec.ts';
import { ExperimentStore, initialBlockState } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { TEST_SUBMIT_TOKEN } from '../utils/cluster-secret.ts';
import { waitFor } from '../utils/wait-for.ts';
import { type Cluster, runOrch, startCluster } from './orch-cluster.ts';

const SPEC = 'test/fixtures/specs/tiny-ab.yaml';

describe('submitting needs the submit token', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster();
    c.startServe();
    await c.startWorker({ cpuCards: 1, repMs: 5 });
  });
  after(async () => {
    await c.stop();
  });

  async function endOf(id: string): Promise<{ state: string; reason: string | null; attempts: number[] }> {
    const store = new ExperimentStore(c.redis, c.prefix);
    await waitFor(
      `experiment ${id} ends`,
      async () => ['done', 'failed', 'cancelled'].includes((await store.state(id)) ?? ''),
      { timeoutMs: 60_000 },
    );
    const exp = (await store.get(id))!;
    return { state: exp.state, reason: exp.reason, attempts: (await store.blocks(id)).map((b) => b.attempt) };
  }

  test('no token: orch submit refuses before it registers anything, exit 2', async () => {
    const r = await runOrch(['submit', SPEC, '--no-wait'], {
      ...c.env,
      ORCH_SUBMIT_TOKEN: '',
      ORCH_SUBMIT_TOKEN_FILE: '',
    });
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /orch submit has no submit token to sign experiments with/);
    assert.equal(
      await c.redis.zcard(orchKeys(c.prefix).sched.experiments),
      0,
      'a submission without a token was registered',
    );
  });

  test('a wrong token: the scheduler refuses the experiment before any grant, and orch submit exits 2', async () => {
    const r = await runOrch(['submit', SPEC, '--results', `${c.fixtureLog}.results`], {
      ...c.env,
      ORCH_SUBMIT_TOKEN: randomBytes(32).toString('hex'),
    });
    assert.equal(r.code, 2, r.stdout + r.stderr);
    const [id] = await c.redis.zrange(orchKeys(c.prefix).sched.experiments, '-1', '-1');
    const end = await endOf(id!);
    assert.equal(end.state, 'failed');
    assert.match(
      end.reason ?? '',
      /^SUBMIT_UNAUTHORIZED: the scheduler refused experiment .*: its submit signature does not verify \(another submit token, or the record was altered after submit\); nothing was planned, built or granted/,
    );
    assert.deepEqual(
      end.attempts.filter((a) => a > 0),
      [],
      'a block of the refused experiment was granted',
    );
    assert.deepEqual(c.rankLog(), [], 'a rank started for the refused experiment');
  });

  test('a record without a signature, or altered after signing: refused, no rank starts', async () => {
    const store = new ExperimentStore(c.redis, c.prefix);
    const loaded = loadSpec(SPEC);
    // signed, then its spec altered: what anyone who can write to Redis could do to a queued one
    const sub = await submitExperiment({
      redis: c.redis,
      prefix: c.prefix,
      loaded: { ...loaded, text: 'name: other\n' },
      submitToken: TEST_SUBMIT_TOKEN,
      id: 'altered-1',
    });
    const unsigned = 'unsigned-1';
    const record = await c.redis.hgetall(orchKeys(c.prefix).exp(sub.id));
    // the scheduler may have read the first before the change: the test alters a copy registered under a fresh id
    const { submit_sig: _sig, ...bare } = record;
    const blocks = sub.plan.blocks.map((b) => [String(b.index), JSON.stringify(initialBlockState(b.index))]);
    await store.register(unsigned, { ...bare, id: unsigned }, blocks);
    const altered = 'altered-2';
    await store.register(altered, { ...record, id: altered, spec: `${record.spec}# altered\n` }, blocks);
    for (const [id, why] of [
      [unsigned, 'it carries no submit signature'],
      [altered, 'its submit signature does not verify'],
    ] as const) {
      const end = await endOf(id);
      assert.equal(end.state, 'failed', id);
      assert.ok(
        end.reason?.startsWith(`SUBMIT_UNAUTHORIZED: the scheduler refused experiment ${id}: ${why}`),
        `${id}: ${end.reason}`,
      );
      assert.deepEqual(
        end.attempts.filter((a) => a > 0),
        [],
        `${id}: a block was granted`,
      );
    }
    // the signed original (its text as signed) ran
    assert.equal((await endOf(sub.id)).state, 'done');
  });

  test('control: the token orch serve holds runs the experiment to done', async () => {
    const r = await runOrch(['submit', SPEC, '--results', `${c.fixtureLog}.results`], c.env);
    assert.equal(r.code === 0 || r.code === 3 || r.code === 4, true, `exit ${r.code}: ${r.stdout}${r.stderr}`);
    assert.ok(c.rankLog().length > 0, 'no rank ran for the signed experiment');
  });
});
