// A private redis-server whose free port was taken between freePort's close and the server's bind
// (another server, an outgoing connection's ephemeral port) starts on another port instead of
// failing the run: `orch submit` on a busy host, and every test that starts its own Redis. A port
// the caller chose is never swapped.

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { freePort, PORT_TRIES, startRedisServer } from '../../store/redis-server-process.ts';

describe('a private redis-server whose port was taken before it bound it', () => {
  let holder: Server;
  let taken: number;
  before(async () => {
    holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
    const addr = holder.address();
    assert.ok(typeof addr === 'object' && addr !== null);
    taken = addr.port;
  });
  after(() => new Promise<void>((r) => holder.close(() => r())));

  it('starts on another free port and answers there', async () => {
    const offered: number[] = [];
    const server = await startRedisServer({
      freePort: async () => {
        const port = offered.length === 0 ? taken : await freePort();
        offered.push(port);
        return port;
      },
    });
    try {
      assert.equal(offered[0], taken, 'the taken port was offered first');
      assert.equal(offered.length, 2, 'one more port was tried');
      assert.equal(server.port, offered[1]);
      const client = new Redis(server.url, { maxRetriesPerRequest: 1 });
      try {
        assert.equal(await client.ping(), 'PONG');
      } finally {
        client.disconnect();
      }
    } finally {
      await server.stop();
    }
  });

  it('a port the caller named is not swapped: the error names the taken address', async () => {
    await assert.rejects(startRedisServer({ port: taken }), /Address already in use/);
  });

  it('gives up after a bound on tries, with the last error', async () => {
    let tries = 0;
    await assert.rejects(
      startRedisServer({
        freePort: async () => {
          tries++;
          return taken;
        },
      }),
      /Address already in use/,
    );
    assert.equal(tries, PORT_TRIES);
  });
});
