/**
 * The live feeds' fan-out. A topic (a view, an experiment) is rendered by one loop however many
 * pages follow it: at most once per MIN_RENDER_MS when woken (new stream entries), else once per
 * tick; the fragment is sent when it changed, encoded once, the same buffer written to each page.
 * The Redis state is one timer for all pages, and so is the keep-alive. So the work of the live
 * feeds grows with the topics followed, not with the pages, and a page costs a socket and at
 * most MAX_BUFFERED_BYTES (sse-channel.ts): under `orch serve --http` the scheduler's lease
 * renewals share this event loop.
 *
 * Events (layout.ts has the client): `redis` {state}, `fragment` {html}, `reload` (the topic
 * ended while this page followed it: its tables exist now) and `ended` (ended before: stop
 * following, nothing more comes).
 */

import { messageOf } from '../../jobs/message-of.ts';
import { type DashboardContext, redisUp } from './dashboard-context.ts';
import { KEEP_ALIVE_FRAME, type SseChannel, sseFrame } from './sse-channel.ts';

const REDIS_POLL_MS = 250;
const KEEP_ALIVE_MS = 15_000;
const MIN_RENDER_MS = 250;

export interface Rendered {
  html: string;
  /** nothing will change any more (an experiment ended) */
  ended: boolean;
}

export interface TopicSource {
  /** Called once before the first render; `wake` asks for a render now (new entries). */
  start?(wake: () => void): Promise<void>;
  /** `woken`: a wake came since the last render */
  render(woken: boolean): Promise<Rendered>;
  stop?(): void;
}

interface Subscriber {
  ch: SseChannel;
  /** it was sent a fragment of a topic not yet ended */
  sawLive: boolean;
}

class Topic {
  readonly subs = new Set<Subscriber>();
  last: Rendered | null = null;
  private woken = false;
  private nudge: (() => void) | null = null;

  constructor(readonly source: TopicSource) {}

  wake(): void {
    this.woken = true;
    this.nudge?.();
  }

  /** Ends a rest early to look at the pages again (one left). */
  poke(): void {
    this.nudge?.();
  }

  takeWoken(): boolean {
    const w = this.woken;
    this.woken = false;
    return w;
  }

  /** Until a tick passed, or a wake came and MIN_RENDER_MS passed, or the last page left. */
  async rest(tickMs: number): Promise<void> {
    const from = Date.now();
    while (this.subs.size > 0) {
      const elapsed = Date.now() - from;
      if (elapsed >= tickMs || (this.woken && elapsed >= MIN_RENDER_MS)) return;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.nudge = null;
          resolve();
        };
        const timer = setTimeout(done, this.woken ? MIN_RENDER_MS - elapsed : tickMs - elapsed);
        this.nudge = done;
      });
    }
  }
}

export class LiveHub {
  private readonly channels = new Set<SseChannel>();
  private readonly topics = new Map<string, Topic>();
  private readonly timers: NodeJS.Timeout[];
  private redisState: 'up' | 'down';
  private closing = false;

  constructor(
    private readonly ctx: DashboardContext,
    private readonly tickMs: number,
  ) {
    this.redisState = redisUp(ctx) ? 'up' : 'down';
    this.timers = [
      setInterval(() => {
        const state = redisUp(ctx) ? 'up' : 'down';
        if (state === this.redisState) return;
        this.redisState = state;
        this.writeAll(sseFrame('redis', { state }));
        // back up: the views render at once instead of at their next tick
        if (state === 'up') for (const t of this.topics.values()) t.wake();
      }, REDIS_POLL_MS),
      setInterval(() => this.writeAll(KEEP_ALIVE_FRAME), KEEP_ALIVE_MS),
    ];
  }

  get pages(): number {
    return this.channels.size;
  }

  get topicCount(): number {
    return this.topics.size;
  }

  /** Follows the Redis state on `ch` (sent at once, then on every change) until it closes. */
  attach(ch: SseChannel): void {
    this.channels.add(ch);
    ch.write(sseFrame('redis', { state: this.redisState }));
    void ch.closed.then(() => this.channels.delete(ch));
  }

  /** Sends `key`'s fragments on `ch`; the topic starts with its first page and stops with its last. */
  subscribe(key: string, ch: SseChannel, source: () => TopicSource): void {
    let topic = this.topics.get(key);
    if (!topic) {
      topic = new Topic(source());
      this.topics.set(key, topic);
      void this.run(key, topic);
    }
    const sub: Subscriber = { ch, sawLive: false };
    topic.subs.add(sub);
    if (topic.last) this.deliver(sub, topic.last, sseFrame('fragment', { html: topic.last.html }));
    const t = topic;
    void ch.closed.then(() => {
      t.subs.delete(sub);
      if (t.subs.size === 0) t.poke();
    });
  }

  private deliver(sub: Subscriber, r: Rendered, frame: Buffer): void {
    sub.ch.write(frame);
    if (!r.ended) {
      sub.sawLive = true;
      return;
    }
    sub.ch.write(sseFrame(sub.sawLive ? 'reload' : 'ended', {}));
    sub.ch.end();
  }

  private async run(key: string, topic: Topic): Promise<void> {
    try {
      await topic.source.start?.(() => topic.wake());
      while (topic.subs.size > 0 && !this.closing) {
        if (redisUp(this.ctx)) {
          const r = await topic.source.render(topic.takeWoken()).catch((err: Error) => {
            this.ctx.log.debug(
              { err: err.message, topic: key },
              'live feed render failed; trying again at the next tick',
            );
            return null;
          });
          if (r && (r.ended || r.html !== topic.last?.html)) {
            topic.last = r;
            const frame = sseFrame('fragment', { html: r.html });
            for (const sub of [...topic.subs]) this.deliver(sub, r, frame);
          }
          if (r?.ended) break;
        }
        await topic.rest(this.tickMs);
      }
    } catch (err) {
      this.ctx.log.warn({ err: messageOf(err), topic: key }, 'live feed stopped');
      for (const sub of topic.subs) sub.ch.end();
    } finally {
      if (this.topics.get(key) === topic) this.topics.delete(key);
      topic.source.stop?.();
    }
  }

  private writeAll(frame: Buffer): void {
    for (const ch of this.channels) ch.write(frame);
  }

  close(): void {
    this.closing = true;
    for (const t of this.timers) clearInterval(t);
    for (const t of this.topics.values()) t.poke();
    for (const ch of this.channels) ch.end();
  }
}
