/**
 * The rendezvous port of a command gang (worker/free-port.ts): a port already taken is retried
 * with another, not failed; a run of taken ports ends with GANG_NO_PORT naming them.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { describe, test } from 'node:test';
import { pickFreePort, portFree } from '../../worker/free-port.ts';

function listen(port = 0): Promise<Server> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen({ port }, () => resolve(s));
  });
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
});
