/**
 * A metric regex the validate-time check lets through but that backtracks catastrophically
 * (`(a|a)*$`, overlapping alternatives, on a 30-character line) runs on a thread with a per-line
 * budget: the rank fails quickly with METRIC_REGEX_TOO_SLOW naming the pattern and the budget,
 * and meanwhile the worker's event loop stays free — its lease renewals keep moving the lease's
 * expiry. On the event loop itself the match would run for seconds: no renewal, the lease lapses
 * and the rank dies of a lost lease instead.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkMetricSource } from '../../jobs/metric-source.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { startScheduler, submitYaml, waitEnded } from '../orchestrator/in-process-scheduler.ts';
import { freshPrefix } from '../utils/redis.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

const PATTERN = 'ms=(?<value>[0-9]+) (a|a)*$';
// 29 a's and a character the pattern cannot end on: every way to split them is tried
const LINE = `ms=5 ${'a'.repeat(29)}!`;

const spec = `name: regex-budget
design: ab
workload:
  runtime: command
  run:
    cmd: "sleep 0.5; echo 'ms=5 aaaa'; echo '${LINE}'; sleep 20"
    timeout_s: 60
  toggles:
    FAST: { env: FAST, on: "1", off: "0" }
  metric_source:
    format: regex
    pattern: '${PATTERN}'
    value_group: value
  warmup: 0
  steps: 1
toggles: [FAST]
arms:
  - { name: slow, toggles: { FAST: false } }
  - { name: fast, toggles: { FAST: true } }
reps: 2
gates: { identity: false, aa: false }
metric: { name: ms, better: lower }
`;

describe('a catastrophically backtracking metric regex', () => {
  const env = useWorkerEnv('regex-budget');

  test('fails the rank within its budget while the lease renewals keep flowing', async () => {
    assert.deepEqual(
      checkMetricSource({ format: 'regex', pattern: PATTERN, value_group: 'value' }),
      [],
      'the static check lets it through',
    );
    const prefix = freshPrefix();
    await env.spawn({ prefix, host: 'rx', cards: 'cpu:0', heartbeatMs: 300 });
    const sched = await startScheduler({ url: env.server.url, prefix, grantTtlMs: 3000 });
    const leases = new LeaseStore(env.redis, { prefix });
    const expiries = new Set<number>();
    let polling = true;
    const poll = (async () => {
      while (polling) {
        const l = await leases.get('cpu:0@rx');
        if (l) expiries.add(l.expires);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    let id: string;
    try {
      id = await submitYaml(env.redis, prefix, env.dir, 'regex-budget', spec);
      assert.equal(await waitEnded(env.redis, prefix, id, 60_000), 'failed');
    } finally {
      polling = false;
      await poll;
      await sched.stop();
    }
    const blocks = await new ExperimentStore(env.redis, prefix).blocks(id);
    const reason = blocks[0]?.reason ?? '';
    assert.match(
      reason,
      /workload\.metric_source\.pattern "ms=\(\?<value>\[0-9\]\+\) \(a\|a\)\*\$" took longer than its budget of 1000 ms on output line 2/,
      reason,
    );
    assert.equal(blocks[0]?.attempts.length, 1, 'not retried: the same regex fails the same way');
    // the grant's expiry, then the worker's renewals every 300 ms over the sleep and the match
    assert.ok(expiries.size >= 4, `the lease was renewed while the regex ran: ${expiries.size} distinct expiries seen`);
  });
});
