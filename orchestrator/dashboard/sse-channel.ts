/**
 * One live feed's response (Server-Sent Events). A frame is encoded once and the same buffer is
 * written to every channel (live-hub.ts); a client that stops reading is cut off once `maxBuffered`
 * bytes wait for it, so a stalled reader holds at most that much memory, never a growing queue.
 */
import type { FastifyReply } from 'fastify';

/** Bytes queued for one client past which it is disconnected (a few fragments). */
export const MAX_BUFFERED_BYTES = 256 * 1024;

export function sseFrame(event: string, data: unknown): Buffer {
  return Buffer.from(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

export const KEEP_ALIVE_FRAME = Buffer.from(': keep-alive\n\n');

export class SseChannel {
  readonly closed: Promise<void>;
  private done = false;
  private readonly res: FastifyReply['raw'];

  constructor(
    reply: FastifyReply,
    private readonly maxBuffered = MAX_BUFFERED_BYTES,
  ) {
    reply.hijack();
    this.res = reply.raw;
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    this.closed = new Promise<void>((resolve) =>
      this.res.once('close', () => {
        this.done = true;
        resolve();
      }),
    );
  }

  get isClosed(): boolean {
    return this.done;
  }

  write(frame: Buffer): void {
    if (this.done) return;
    if (this.res.writableLength > this.maxBuffered) {
      this.res.destroy();
      return;
    }
    this.res.write(frame);
  }

  end(): void {
    if (!this.done) this.res.end();
  }
}
