/**
 * A command gang's rendezvous going wrong, on a real `orch worker` with two cpu cards running
 * test/fixtures/ranks/torch-rendezvous-rank.py (torch.distributed, gloo, env://: rank 0's TCPStore
 * listens on MASTER_PORT): a rank that never joins it is named with its last lines, by the hello
 * deadline, and the rank waiting for it is ended (worker/command/rendezvous-joins.ts).
 * Skipped with its reason without torch in /usr/bin/python3 (the `torch` suite).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { type RankOutputTail, RankOutputTailSchema } from '../../jobs/rank-output-tail.ts';
import { orchKeys } from '../../store/keys.ts';
import { isAlive } from '../utils/processes.ts';
import { suiteSkip, torchMissing } from '../utils/required-suite.ts';
import { EXPERIMENT, useCommandGang } from './command-gang-harness.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const FIXTURE = join(ROOT, 'test/fixtures/ranks/torch-rendezvous-rank.py');
const CMD = `/usr/bin/python3 ${JSON.stringify(FIXTURE)}`;
const LIBRARY = { PYTHONPATH: join(ROOT, 'ranklib/python'), PYTHONDONTWRITEBYTECODE: '1' };

interface Seen {
  pid: number;
  master_port: string;
}

describe('a command gang whose rank never joins the rendezvous (torch, gloo)', {
  timeout: 240_000,
  skip: suiteSkip('torch', torchMissing()),
}, () => {
  const host = 'rvjoin';
  const gang = useCommandGang('rvjoin', CMD, { host });

  test('rank 1 sleeps before init_process_group: the block fails by the hello deadline naming rank 1, its last lines kept, rank 0 ended', async () => {
    const { end, seen, ms } = await gang.run('rank1-never-joins', 1, {
      helloTimeoutS: 8,
      timeoutS: 3600,
      extra: LIBRARY,
    });
    assert.equal(end.state, 'failed', JSON.stringify(end));
    const reason = end.state === 'failed' ? (end.reason ?? '') : '';
    const port = seen<Seen>(0).master_port;
    assert.match(
      reason,
      new RegExp(
        `rank 1 on card cpu:1@${host} never joined the rendezvous on MASTER_PORT ${port} within 8000 ms \\(none of its processes opened a TCP connection to it\\); rank 0 was waiting in it`,
      ),
    );
    assert.ok(ms < 8000 + 20_000, `the block took ${ms} ms to fail`);
    const rank0 = seen<Seen>(0).pid;
    assert.equal(isAlive(rank0), false, `rank 0 (pid ${rank0}) still runs after the gang failed`);

    // the rank that never joined is the failed rank whose output is kept, not the rank waiting for it
    const records = Object.values(await gang.env.redis.hgetall(orchKeys(gang.prefix()).rankOutput(EXPERIMENT))).map(
      (v) => RankOutputTailSchema.parse(JSON.parse(v)) as RankOutputTail,
    );
    assert.deepEqual(
      records.map((r) => r.rank),
      [1],
    );
    assert.ok(
      records[0]?.stderr.includes('rank 1: loading the shards, before init_process_group'),
      JSON.stringify(records),
    );
  });
});
