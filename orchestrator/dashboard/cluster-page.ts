/**
 * `/`: every card of every host and who holds it (experiment, block, rank, since when), the
 * hosts' heartbeats, and each host's build lock (holder, waiters in arrival order).
 */
import type { FastifyInstance } from 'fastify';
import { readBuildState } from '../../store/build-state.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { type CardStatus, clusterStatus } from '../experiment/cluster-status.ts';
import { type DashboardContext, fromRedis } from './dashboard-context.ts';
import { ago, type Html, html } from './html.ts';
import { sendPage } from './send-page.ts';

export interface CardHolding {
  card: CardStatus;
  /** the rank the card serves in its block's gang, and since when the gang holds it */
  rank: number | null;
  since: number | null;
}

/** Cards with their holders' rank and grant time (from the holding block's state). */
export async function cardHoldings(ctx: DashboardContext): Promise<CardHolding[]> {
  const s = await clusterStatus(ctx.redis, ctx.prefix, { all: false });
  const store = new ExperimentStore(ctx.redis, ctx.prefix);
  return Promise.all(
    s.cards.map(async (card) => {
      if (!card.holder) return { card, rank: null, since: null };
      const b = await store.block(card.holder.experiment, card.holder.block);
      const rank = b ? b.gang.flatMap((p) => p.cards).indexOf(card.id) : -1;
      return { card, rank: rank >= 0 ? rank : null, since: b?.granted_at ?? null };
    }),
  );
}

export async function renderCluster(ctx: DashboardContext): Promise<Html> {
  return fromRedis(ctx, async () => {
    const registry = new CardRegistry(ctx.redis, { prefix: ctx.prefix });
    const cards = await cardHoldings(ctx);
    const hostNames = [...new Set(cards.map((c) => c.card.host))].sort();
    const hosts = await Promise.all(
      hostNames.map(async (h) => ({
        info: await registry.hostInfo(h),
        ttl: await ctx.redis.pttl(orchKeys(ctx.prefix).hostAlive(h)),
      })),
    );
    const builds = await readBuildState(ctx.redis, { prefix: ctx.prefix });
    // hosts of different versions never share a gang: marked when there are several
    const versions = new Set(cards.map((c) => c.card.version ?? ''));
    return html`<h2>Cards</h2>
<table id="cards"><tr><th>card</th><th>host</th><th>backend</th><th>alive</th><th>held by</th><th>block</th><th>rank</th><th>since</th><th>lease expires in</th></tr>
${cards.length === 0 ? html`<tr><td colspan="9" class="muted">no card registered: start orch worker on a host</td></tr>` : ''}
${cards.map(
  ({ card: c, rank, since }) => html`<tr data-card="${c.id}"><td>${c.id}</td><td>${c.host}</td><td>${c.backend}</td>
<td class="${c.alive ? 'ok' : 'bad'}">${c.alive ? 'alive' : 'dead'}</td>
${
  c.holder
    ? html`<td><a href="/experiments/${encodeURIComponent(c.holder.experiment)}">${c.holder.experiment}</a></td><td>${c.holder.block}</td><td>${rank ?? '?'}</td><td>${ago(since)}</td><td class="num">${(Math.max(0, c.holder.expires_in_ms) / 1000).toFixed(1)} s</td>`
    : html`<td class="muted">free</td><td></td><td></td><td></td><td></td>`
}</tr>`,
)}
</table>
<h2>Hosts</h2>
<table id="hosts"><tr><th>host</th><th>heartbeat</th><th>worker pid</th><th>started</th><th>cards</th><th>version</th></tr>
${hosts.map(({ info, ttl }) => html`<tr><td>${info.host}</td><td class="${info.alive ? 'ok' : 'bad'}">${info.alive ? `alive (expires in ${(ttl / 1000).toFixed(1)} s)` : 'missed: no heartbeat'}</td><td>${info.pid ?? '–'}</td><td>${ago(info.started)}</td><td>${info.cards.length}</td><td class="${versions.size > 1 ? 'bad' : ''}">${cards.find((c) => c.card.host === info.host)?.card.version ?? '–'}</td></tr>`)}
</table>
<h2>Build locks</h2>
${builds.length === 0 ? html`<p class="muted">no host has built anything yet</p>` : ''}
${builds.map(
  (b) => html`<h3>${b.host}</h3>
<p>${b.holder ? html`held by <a href="/experiments/${encodeURIComponent(b.holder.experiment)}">${b.holder.experiment}</a> (pid ${b.holder.pid}, ${Math.round(b.holder.elapsed_ms / 1000)} s so far${b.holder.past.median_ms !== null ? `, similar builds took ${Math.round(b.holder.past.median_ms / 1000)} s` : ''}): <code>${b.holder.cmd}</code>` : 'free'}</p>
${b.waiters.length > 0 ? html`<table><tr><th>position</th><th>experiment</th><th>pid</th><th>waiting for</th></tr>${b.waiters.map((w) => html`<tr><td>${w.position}</td><td>${w.experiment}</td><td>${w.pid}</td><td>${Math.round(w.waited_ms / 1000)} s</td></tr>`)}</table>` : ''}`,
)}`;
  });
}

export function registerClusterPage(app: FastifyInstance, ctx: DashboardContext): void {
  app.get('/', (_req, reply) =>
    sendPage(
      ctx,
      reply,
      { title: 'Cluster', nav: 'cluster', live: '/live?view=cluster' },
      async () => html`<div data-live>${await renderCluster(ctx)}</div>`,
    ),
  );
}
