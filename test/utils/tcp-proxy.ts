/**
 * A TCP proxy a test controls, between one process and its Redis: `sever()` resets every
 * connection (the client sees ECONNRESET and reconnects), `blackhole(true)` keeps connections
 * open but forwards nothing either way and leaves new ones unanswered (a network partition: the
 * client's commands hang), `blackhole(false)` heals it (what was sent meanwhile is dropped, the
 * connections are cut so clients start clean), `refuse(true)` cuts every connection and resets
 * each new one at once (the server stopped: the client fails fast) until `refuse(false)`.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** `url` with its host:port replaced by the proxy's */
  urlFor(url: string): string;
  sever(): void;
  blackhole(on: boolean): void;
  refuse(on: boolean): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host?: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let holed = false;
  let refusing = false;
  const server: Server = createServer((client) => {
    if (refusing) {
      client.on('error', () => undefined).resetAndDestroy();
      return;
    }
    const upstream = connect(target.port, target.host ?? '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.on('data', (d) => {
      if (!holed) upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (!holed) client.write(d);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const sever = () => {
    for (const [a, b] of pairs) {
      a.resetAndDestroy();
      b.destroy();
    }
    pairs.clear();
  };
  return {
    port,
    urlFor: (url) => {
      const u = new URL(url);
      u.host = `127.0.0.1:${port}`;
      return u.toString();
    },
    sever,
    blackhole(on) {
      if (holed && !on) sever();
      holed = on;
    },
    refuse(on) {
      refusing = on;
      if (on) sever();
    },
    close: async () => {
      sever();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
