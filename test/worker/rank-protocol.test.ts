/**
 * A rank that breaks the protocol fails its block, never commits: a rep line without step_ms, a
 * step_ms holding a null or a string, a line over MAX_RANK_LINE_BYTES, and a stale final line
 * answering the next request (which before the id check was stored under the wrong arm). The
 * reason that reaches Redis (BullMQ's failedReason and every failed rep) names the fault, quotes
 * the line and, for a schema failure, the schema path.
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_RANK_LINE_LABEL } from '../../jobs/line-limit.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { ResultStore } from '../../store/result-store.ts';
import { BareExperimentDispatcher, blockJob } from '../utils/block-jobs.ts';
import { rankPids, readEvents } from '../utils/events.ts';
import { isAlive } from '../utils/processes.ts';
import { freshPrefix } from '../utils/redis.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

describe('a rank that breaks the protocol', () => {
  const env = useWorkerEnv('protocol');

  // One rank; its requests: 1 the identity gate of B, 2 rep A (b0-a1-rep0), 3 rep B (b0-a1-rep1)...
  async function runBad(host: string, bad: string) {
    const prefix = freshPrefix();
    await env.spawn({ prefix, host, cards: 'cpu:0', env: { FIXTURE_BAD: bad } });
    const leases = new LeaseStore(env.redis, { prefix });
    const dispatcher = new BareExperimentDispatcher(env.redis, { prefix, pollMs: 20 });
    const cards = [`cpu:0@${host}`];
    const g = await leases.acquireGang({ cards, owner: host, ttlMs: 5000, experiment: 'p', block: 0 });
    assert.ok(g.granted);
    const job = blockJob({ experiment: 'p', block: 0, attempt: 1, epoch: g.epoch, host, cards });
    await dispatcher.dispatch(job);
    const end = await dispatcher.waitEnd(job, { timeoutMs: 30_000 });
    await dispatcher.close();
    const results = new ResultStore(env.redis, { prefix });
    assert.equal(end.state, 'failed', JSON.stringify(end));
    const reason = end.state === 'failed' ? end.reason : '';
    assert.equal(end.state === 'failed' && end.unrecoverable, true, 'a protocol fault is not retried');
    const failed = await results.failed('p');
    assert.deepEqual(Object.keys(failed).sort(), ['0/A/0', '0/A/1', '0/B/0', '0/B/1']);
    for (const f of Object.values(failed)) assert.equal(f.reason, `attempt 1 failed: ${reason}`);
    assert.deepEqual(await results.results('p'), {}, 'nothing is committed');
    const pids = rankPids(await readEvents(env.redis, prefix, 'p'), 1);
    assert.ok(
      pids.every((p) => !isAlive(p)),
      'the rank is gone',
    );
    assert.deepEqual(await leases.held(cards), []);
    return reason;
  }

  test('a rep line without step_ms: the line and the schema path in the reason', async () => {
    const reason = await runBad('p1', '0:2:no-step-ms');
    assert.match(
      reason,
      /^rank 0 on card cpu:0@p1 \(pid \d+\) broke the protocol: graphrt protocol: rep\.step_ms: Invalid input: expected array, received undefined: /,
    );
    assert.match(
      reason,
      /: \{"v":1,"type":"rep","id":"b0-a1-rep0","arm":"A","workload":"chain",/,
      'the line is quoted',
    );
    assert.doesNotMatch(reason, /"step_ms"/);
  });

  test('a null in step_ms is refused, not committed as a measurement', async () => {
    const reason = await runBad('p2', '0:2:step-ms-null');
    assert.match(
      reason,
      /broke the protocol: graphrt protocol: rep\.step_ms\.0: Invalid input: expected number, received null: \{"v":1,"type":"rep","id":"b0-a1-rep0"/,
    );
  });

  test('a string in step_ms is refused', async () => {
    const reason = await runBad('p3', '0:2:step-ms-string');
    assert.match(
      reason,
      /broke the protocol: graphrt protocol: rep\.step_ms\.0: Invalid input: expected number, received string: /,
    );
  });

  test('a line over the limit fails the rank naming the limit; its rest is discarded', async () => {
    const reason = await runBad('p4', '0:2:long-line');
    assert.ok(
      reason.includes(`broke the protocol: a stdout line longer than ${MAX_RANK_LINE_LABEL}, starting: xxxx`),
      reason,
    );
    assert.ok(reason.length < 2000, `the reason quotes the line's head only (${reason.length} chars)`);
  });

  test('a repeated final line answering the next request: both ids and arms quoted', async () => {
    const reason = await runBad('p5', '0:2:repeat-final');
    assert.match(
      reason,
      /broke the protocol: a "rep" line of id b0-a1-rep0, arm A with request b0-a1-rep1 \(arm B\) in flight: \{"v":1,"type":"rep","id":"b0-a1-rep0","arm":"A"/,
    );
  });
});
