/**
 * Server-Sent Events for the pages' live parts (layout.ts has the client), through one LiveHub:
 *   /live?view=cluster|queue|experiments|nightly
 *                              the Redis state, and the view's fragment re-rendered each second
 *                              and sent when it changed (the same render function as the page;
 *                              experiments with the page's filter query: one topic per filter)
 *   /live/experiments/:id      the Redis state, and the progress fragment on every new entry of
 *                              the experiment's event stream (one blocking reader for all
 *                              streams: stream-wakeups.ts); `reload` once the experiment ended
 * A feed beyond the limits (sse-admission.ts) is refused with 503 and Retry-After.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ExperimentRecord, ExperimentStore, TERMINAL_EXPERIMENT_STATES } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { ProgressTracker } from '../experiment/progress.ts';
import { renderCluster } from './cluster-page.ts';
import { type DashboardContext, fromRedis } from './dashboard-context.ts';
import { type ListQuery, listQueryString, renderExperimentList } from './experiments-list-page.ts';
import { renderExperimentProgress } from './experiments-page.ts';
import type { Html } from './html.ts';
import { LiveHub, type TopicSource } from './live-hub.ts';
import { renderNightly } from './nightly-page.ts';
import { renderQueue } from './queue-page.ts';
import { SSE_RETRY_AFTER_S, SseAdmission, type SseLimits } from './sse-admission.ts';
import { SseChannel } from './sse-channel.ts';
import { StreamWakeups } from './stream-wakeups.ts';

const TICK_MS = 1000;
/** Entries one XREAD of a drain returns (ProgressTracker.poll's COUNT): fewer means caught up. */
const POLL_COUNT = 500;
/** Reads one render drains at most; the rest waits for the next render. */
const MAX_DRAIN_READS = 20;
/** At most one refusal log line per this many ms (a flood would otherwise flood the log). */
const REFUSAL_LOG_MS = 10_000;

interface View {
  render(ctx: DashboardContext, query: ListQuery): Promise<Html>;
  /** the part of the query that makes a topic of its own ('' for a view without parameters) */
  topic(query: ListQuery): string;
}

const plain = (render: (ctx: DashboardContext) => Promise<Html>): View => ({
  render: (ctx) => render(ctx),
  topic: () => '',
});

const VIEWS: Record<string, View> = {
  cluster: plain(renderCluster),
  queue: plain(renderQueue),
  nightly: plain(renderNightly),
  experiments: { render: renderExperimentList, topic: listQueryString },
};

function viewSource(ctx: DashboardContext, view: View, query: ListQuery): TopicSource {
  return { render: async () => ({ html: (await view.render(ctx, query)).text, ended: false }) };
}

/** An experiment's progress: its stream read on the shared connection when the reader wakes it. */
function experimentSource(ctx: DashboardContext, wakeups: StreamWakeups, exp: ExperimentRecord): TopicSource {
  const tracker = new ProgressTracker(ctx.redis, ctx.prefix, exp);
  const key = orchKeys(ctx.prefix).events(exp.id);
  let drained = false;
  return {
    start: (wake) => wakeups.watch(key, wake),
    stop: () => wakeups.unwatch(key),
    render: async (woken) => {
      if (woken || !drained) {
        // BLOCK 1: returns at once while entries remain
        for (let i = 0; i < MAX_DRAIN_READS; i++) if ((await tracker.poll(null)).length < POLL_COUNT) break;
        drained = true;
      }
      const p = await tracker.snapshot();
      return { html: renderExperimentProgress(p).text, ended: TERMINAL_EXPERIMENT_STATES.has(p.state) };
    },
  };
}

export interface LiveEvents {
  hub: LiveHub;
  admission: SseAdmission;
  close(): Promise<void>;
}

export function registerLiveEvents(app: FastifyInstance, ctx: DashboardContext, limits: SseLimits): LiveEvents {
  const hub = new LiveHub(ctx, TICK_MS);
  const admission = new SseAdmission(limits);
  const wakeups = new StreamWakeups(ctx.redis, ctx.log);
  let refused = 0;
  let loggedAt = 0;

  /** The channel, or null when the request was answered 503 (a limit reached). */
  const open = (req: FastifyRequest, reply: FastifyReply): SseChannel | null => {
    const a = admission.admit(req.ip);
    if (!a.ok) {
      refused++;
      if (Date.now() - loggedAt >= REFUSAL_LOG_MS) {
        ctx.log.warn({ ip: req.ip, refused, held: admission.total }, `live feed refused with 503: ${a.why}`);
        loggedAt = Date.now();
        refused = 0;
      }
      void reply
        .code(503)
        .header('retry-after', String(SSE_RETRY_AFTER_S))
        .header('connection', 'close')
        .type('text/plain')
        .send(`No live feed for now: ${a.why}. Try again in ${SSE_RETRY_AFTER_S} s, or close other dashboard tabs.\n`);
      return null;
    }
    const ch = new SseChannel(reply);
    void ch.closed.then(a.release);
    hub.attach(ch);
    return ch;
  };

  app.get<{ Querystring: ListQuery & { view?: string } }>('/live', async (req, reply) => {
    const ch = open(req, reply);
    if (ch === null) return reply;
    const { view: name = '', ...query } = req.query;
    const view = VIEWS[name];
    if (view) hub.subscribe(`view:${name}?${view.topic(query)}`, ch, () => viewSource(ctx, view, query));
  });

  app.get<{ Params: { id: string } }>('/live/experiments/:id', async (req, reply) => {
    const ch = open(req, reply);
    if (ch === null) return reply;
    const exp = await fromRedis(ctx, () => new ExperimentStore(ctx.redis, ctx.prefix).get(req.params.id)).catch(
      () => null,
    );
    if (!exp || ch.isClosed) return;
    hub.subscribe(`experiment:${exp.id}`, ch, () => experimentSource(ctx, wakeups, exp));
  });

  return {
    hub,
    admission,
    close: async () => {
      hub.close();
      await wakeups.close();
    },
  };
}
