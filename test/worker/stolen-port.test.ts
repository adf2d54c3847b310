/**
 * worker/command/stolen-port.ts against real sockets: rank 0's last lines say an address was in
 * use, and that address is the gang's port (named in the line, or held now by another process);
 * a failure of another kind, or a port of the program's own, is not a stolen MASTER_PORT.
 * The whole retry runs against torch in test/multirank/stolen-port.test.ts.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { describe, test } from 'node:test';
import { stolenPortLine } from '../../worker/command/stolen-port.ts';
import { pickFreePort, releasePort } from '../../worker/free-port.ts';

const TORCH = (port: number) =>
  `RuntimeError: The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:${port} (errno: 98 - Address already in use).`;
const PYTHON = 'OSError: [Errno 98] Address already in use';

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen({ port, exclusive: true }, () => resolve(s));
  });
}

/** A port free now (not handed to a gang: released at once). */
async function freePort(): Promise<number> {
  const port = await pickFreePort();
  releasePort(port);
  return port;
}

describe('stolenPortLine', () => {
  test("torch's line names the port: stolen, whether or not the thief still holds it", async () => {
    const port = await freePort();
    const out = { stdout: [], stderr: ['Traceback (most recent call last):', TORCH(port)] };
    assert.equal(await stolenPortLine(out, port), TORCH(port));
  });

  test('a line that names no port: stolen only while another process holds the port', async () => {
    const port = await freePort();
    const out = { stdout: [], stderr: [PYTHON] };
    assert.equal(await stolenPortLine(out, port), null);
    const thief = await listen(port);
    try {
      assert.equal(await stolenPortLine(out, port), PYTHON);
    } finally {
      await new Promise((r) => thief.close(r));
    }
  });

  test("another port in use (the program's own metrics server), or another failure: not the gang's port", async () => {
    const port = await freePort();
    const other = port === 29999 ? 29998 : 29999;
    assert.equal(await stolenPortLine({ stdout: [], stderr: [TORCH(other)] }, port), null);
    assert.equal(await stolenPortLine({ stdout: [], stderr: ['RuntimeError: CUDA error: out of memory'] }, port), null);
  });
});
