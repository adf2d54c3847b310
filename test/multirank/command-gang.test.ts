/**
 * A user's program as a gang (worker/gang-ranks.ts, worker/command/command-gang.ts,
 * worker/gang-exchange.ts): a real `orch worker` with two cpu cards runs a 2-rank resident
 * command block of test/fixtures/ranks/gang-rank.py, which meets on MASTER_ADDR:MASTER_PORT as
 * torch's TCPStore would and exchanges bytes before hello and inside a request. Then each way a
 * gang goes wrong: rank 0 never reaches its exchange, a rank never joins the rendezvous, a rank
 * exits 0 early, a rank answers an error while the other waits in a collective, the ranks
 * disagree on the step count, a rank asks for a 17th exchange, one rank's capture fails while the
 * other's does not.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { readEvents } from '../utils/events.ts';
import { useCommandGang } from './command-gang-harness.ts';

const FIXTURE = new URL('../fixtures/ranks/gang-rank.py', import.meta.url).pathname;

interface Seen {
  env: Record<string, string>;
  exchanged: Record<string, string>;
}

describe('a command gang of 2 resident ranks on one host', () => {
  const { env, run, prefix } = useCommandGang('cmdgang', `/usr/bin/python3 ${JSON.stringify(FIXTURE)}`, {
    host: 'cg1',
  });

  test("every rank gets torchrun's environment, meets on MASTER_PORT, and gets rank 0's bytes, before hello and inside a rep", async () => {
    const { end, seen } = await run('ok', 1);
    assert.equal(end.state, 'completed', JSON.stringify(end));
    const [r0, r1] = [seen<Seen>(0), seen<Seen>(1)];
    assert.deepEqual(
      [
        r0.env.RANK,
        r1.env.RANK,
        r0.env.WORLD_SIZE,
        r1.env.LOCAL_RANK,
        r1.env.LOCAL_WORLD_SIZE,
        r1.env.GROUP_RANK,
        r1.env.ORCH_RANK,
        r1.env.CUDA_VISIBLE_DEVICES,
      ],
      ['0', '1', '2', '1', '2', '0', '1', ''],
    );
    assert.equal(r0.env.MASTER_ADDR, '127.0.0.1');
    assert.equal(r0.env.MASTER_PORT, r1.env.MASTER_PORT);
    assert.ok(Number(r0.env.MASTER_PORT) >= 20000 && Number(r0.env.MASTER_PORT) <= 32767, r0.env.MASTER_PORT);
    assert.equal(r0.exchanged['nccl-id']?.length, 64);
    assert.equal(r1.exchanged['nccl-id'], r0.exchanged['nccl-id'], 'rank 1 got rank 0 bytes');
    assert.equal(Buffer.from(r1.exchanged['in-rep'] ?? '', 'hex').toString(), 'from rank 0');
    // a new attempt of a block gets a new port
    const first = await run('exit0-early', 2);
    assert.equal(first.end.state, 'failed');
    const again = await run('ok', 2, { attempt: 2 });
    assert.equal(again.end.state, 'completed', JSON.stringify(again.end));
    assert.notEqual(again.seen<Seen>(0).env.MASTER_PORT, first.seen<Seen>(0).env.MASTER_PORT);
  });

  test('the identity gate runs on every rank; a stale input planted on rank 1 fails the gate there only', async () => {
    const { end } = await run('ok', 3, { identity: true, extra: { FIXTURE_STALE_RANK: '1' } });
    const evs = (await readEvents(env.redis, prefix(), 'cg')).filter((e) => e.block === 3 && e.event.type === 'gate');
    assert.equal(evs.length, 2, JSON.stringify(end));
    const byRank = Object.fromEntries(evs.map((e) => [e.rank, e.event.pass]));
    assert.deepEqual(byRank, { '0': true, '1': false });
  });

  test('rank 0 never reaches its exchange: the deadline names rank 0', async () => {
    const { end } = await run('rank0-no-exchange', 4, { helloTimeoutS: 6 });
    assert.equal(end.state, 'failed');
    assert.match(
      end.state === 'failed' ? end.reason : '',
      /exchange "nccl-id".*rank 0 (did not publish|never published)/,
    );
  });

  test('a rank that never joins the rendezvous: the failure names it and the rank waiting for it', async () => {
    const { end } = await run('skip-join', 5, { helloTimeoutS: 6 });
    assert.equal(end.state, 'failed');
    // neither said hello (rank 0 waits for rank 1 in its setup): rank 0's listener on MASTER_PORT tells them apart
    assert.match(
      end.state === 'failed' ? end.reason : '',
      /^rank 1 on card cpu:1@cg1 never joined the rendezvous on MASTER_PORT \d+ within 6000 ms \(none of its processes opened a TCP connection to it\); rank 0 was waiting in it; every rank of the gang was ended$/,
    );
  });

  test('a rank exits 0 early: the gang fails naming it', async () => {
    const { end } = await run('exit0-early', 6);
    assert.equal(end.state, 'failed');
    assert.match(end.state === 'failed' ? end.reason : '', /rank 1 on card cpu:1@cg1 \(pid \d+\) exited with code 0/);
  });

  test('a rank answers an error while the other waits in a collective: the gang fails at once, not at the request timeout', async () => {
    const { end, ms } = await run('fail-rep', 7);
    assert.equal(end.state, 'failed');
    assert.match(end.state === 'failed' ? end.reason : '', /rank 1 on card cpu:1@cg1 answered rep .* STEP_FAILED/);
    assert.ok(ms < 20_000, `the gang ended after ${ms} ms (the request timeout is 30 s)`);
  });

  test('the ranks disagree on the step count: the gang fails naming rank 1', async () => {
    const { end } = await run('few-steps', 8);
    assert.equal(end.state, 'failed');
    assert.match(end.state === 'failed' ? end.reason : '', /rank 1/);
  });

  test("rank 0's capture fails while rank 1's replay waits for it in a collective: the gang fails naming both, not at the request timeout", async () => {
    const { end, ms } = await run('capture-rank0', 10);
    assert.equal(end.state, 'failed', JSON.stringify(end));
    const reason = end.state === 'failed' ? end.reason : '';
    assert.match(
      reason,
      /rank 0 on card cpu:0@cg1 answered CAPTURE_FAILED: .*rank 0 calls \.item\(\) inside the captured step.*rank 1 on card cpu:1@cg1 had not answered within \d+ s/,
    );
    assert.doesNotMatch(reason, /already in flight|RANK_REQUEST_INVALID|RANK_TIMEOUT/);
    // the ranks agree within CAPTURE_AGREE_MS (10 s), well before the request timeout (30 s)
    assert.ok(ms < 25_000, `the gang ended after ${ms} ms (the request timeout is 30 s)`);
  });

  test("rank 0's capture fails while rank 1 answers its rep: the gang fails at once naming both", async () => {
    const { end, ms } = await run('capture-rank0-replayed', 11);
    assert.equal(end.state, 'failed', JSON.stringify(end));
    assert.match(
      end.state === 'failed' ? end.reason : '',
      /rank 0 on card cpu:0@cg1 answered CAPTURE_FAILED: .*rank 1 on card cpu:1@cg1 answered rep/,
    );
    assert.ok(ms < 8_000, `the gang ended after ${ms} ms`);
  });

  test('a 17th exchange is a protocol fault', async () => {
    const { end } = await run('many-exchanges', 9);
    assert.equal(end.state, 'failed');
    assert.match(
      end.state === 'failed' ? end.reason : '',
      /exchange "k15" is this rank's 17th of the attempt; at most 16/,
    );
  });
});
