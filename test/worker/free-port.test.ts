/**
 * The rendezvous port of a command gang (worker/free-port.ts): a port already taken is retried
 * with another, not failed; a run of taken ports ends with GANG_NO_PORT naming them; a range
 * (ORCH_GANG_PORTS) smaller than the tries is probed whole; a port handed to a gang is not handed
 * to another before its attempt releases it, though nothing binds it yet; a malformed
 * ORCH_GANG_PORTS is refused.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { describe, test } from 'node:test';
import { gangPortRange, PORT_RANGE, pickFreePort, portFree, releasePort } from '../../worker/free-port.ts';

function listen(port = 0): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen({ port, exclusive: true }, () => resolve(s));
  });
}

/** A run of `count` ports, each free now: the first of them. */
async function freeRun(count: number): Promise<number> {
  for (let base = PORT_RANGE.low; base + count <= PORT_RANGE.high; base += count) {
    const free = await Promise.all(Array.from({ length: count }, (_, k) => portFree(base + k)));
    if (free.every(Boolean)) return base;
  }
  throw new Error(`no ${count} consecutive free ports in ${PORT_RANGE.low}-${PORT_RANGE.high}`);
}

describe('the rendezvous port of a command gang', () => {
  test('a taken port is found taken by the bind-probe and another is picked', async () => {
    const held = await listen();
    const taken = (held.address() as { port: number }).port;
    const free = await listen();
    const freePort = (free.address() as { port: number }).port;
    await new Promise((r) => free.close(r));
    try {
      assert.equal(await portFree(taken), false);
      const seq = [taken, freePort];
      const heard: number[] = [];
      const port = await pickFreePort({ candidates: () => seq.shift() as number, onTaken: (p) => heard.push(p) });
      assert.equal(port, freePort);
      assert.deepEqual(heard, [taken]);
      releasePort(port);
    } finally {
      await new Promise((r) => held.close(r));
    }
  });

  test('only taken ports: GANG_NO_PORT, naming them', async () => {
    const held = await listen();
    const taken = (held.address() as { port: number }).port;
    try {
      await assert.rejects(
        pickFreePort({ candidates: () => taken, tries: 3 }),
        (e: Error & { code?: string }) => e.code === 'GANG_NO_PORT' && e.message.includes(String(taken)),
      );
    } finally {
      await new Promise((r) => held.close(r));
    }
  });

  test('a range with one port free: every pick finds it, each taken port probed once', async () => {
    const size = 16;
    const low = await freeRun(size);
    const held = await Promise.all(Array.from({ length: size - 1 }, (_, k) => listen(low + k)));
    try {
      for (let pick = 0; pick < size; pick++) {
        const heard: number[] = [];
        const port = await pickFreePort({ range: { low, high: low + size - 1 }, onTaken: (p) => heard.push(p) });
        assert.equal(port, low + size - 1);
        assert.equal(new Set(heard).size, heard.length, `a port probed twice: ${heard.join(', ')}`);
        releasePort(port);
      }
    } finally {
      await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
    }
  });

  test('a port handed to a gang whose rank 0 has not bound it yet is not handed to another until released', async () => {
    const port = await freeRun(1);
    const range = { low: port, high: port };
    const first = await pickFreePort({ range });
    assert.equal(first, port);
    // still free to bind (the first gang's rank 0 is starting), yet taken for the second gang
    assert.equal(await portFree(port), true);
    await assert.rejects(pickFreePort({ range }), (e: Error & { code?: string }) => e.code === 'GANG_NO_PORT');
    releasePort(first);
    assert.equal(await pickFreePort({ range }), port);
    releasePort(port);
  });

  test('ORCH_GANG_PORTS: LOW-HIGH is the range; anything else is refused naming the variable', () => {
    assert.deepEqual(gangPortRange({}), PORT_RANGE);
    assert.deepEqual(gangPortRange({ ORCH_GANG_PORTS: '29500-29599' }), { low: 29500, high: 29599 });
    for (const bad of ['29500', '29599-29500', '80-90', '29500-70000', 'a-b'])
      assert.throws(
        () => gangPortRange({ ORCH_GANG_PORTS: bad }),
        (e: Error & { code?: string }) => e.code === 'CLI_USAGE' && e.message.startsWith(`ORCH_GANG_PORTS=${bad}:`),
      );
  });
});
