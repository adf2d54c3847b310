/**
 * The page frame: navigation, the Redis state banner, and the live-update client. A page names
 * its SSE source (`live`); the source sends `fragment` events (new HTML for the `[data-live]`
 * element, rendered by the same function as the page), `redis` events (up/down: the page reloads
 * when the state differs from the one it was rendered in), `reload` (e.g. an experiment
 * ended, so its tables and plots exist now) and `ended` (it had ended already: nothing more comes,
 * so the page stops following instead of reconnecting).
 */
import { type Html, html, raw } from './html.ts';

export interface PageOptions {
  title: string;
  /** which navigation entry is current */
  nav: 'cluster' | 'queue' | 'experiments' | 'nightly' | 'bull';
  body: Html;
  redis: 'up' | 'down';
  /** the SSE source; default /live (only the Redis state) */
  live?: string;
  /** a message shown instead of the body's data when Redis is down */
  redisProblem?: string;
}

const NAV: [PageOptions['nav'], string, string][] = [
  ['cluster', '/', 'Cluster'],
  ['queue', '/queue', 'Queue'],
  ['experiments', '/experiments', 'Experiments'],
  ['nightly', '/nightly', 'Nightly'],
  ['bull', '/bull', 'BullMQ'],
];

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{background:#1f2937;color:#fff;padding:8px 16px;display:flex;gap:16px;align-items:center}
header a{color:#cbd5e1;text-decoration:none}header a.on{color:#fff;font-weight:600}
main{padding:12px 16px}table{border-collapse:collapse;margin:8px 0 16px}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f3f4f6}
.num{text-align:right;font-variant-numeric:tabular-nums}.bad{color:#b91c1c}.ok{color:#15803d}
#redis-state.down{background:#fee2e2;color:#7f1d1d;padding:8px 16px;font-weight:600}
#redis-state.up{display:none}.bar{display:inline-block;width:160px;height:10px;background:#e5e7eb;vertical-align:middle}
.bar span{display:block;height:100%;background:#2563eb}.plot svg{max-width:100%;height:auto}
.muted{color:#6b7280}form.inline{display:inline}`;

// The fragment's element is the [data-live] inside main: the body's data-live names the feed.
const CLIENT = `
(function(){
  var body=document.body, el=document.querySelector('main [data-live]'), banner=document.getElementById('redis-state');
  var src=new EventSource(body.dataset.live);
  src.addEventListener('fragment',function(e){ if(el) el.innerHTML=JSON.parse(e.data).html; });
  src.addEventListener('redis',function(e){ var s=JSON.parse(e.data);
    if(s.state!==body.dataset.redis){ location.reload(); } });
  src.addEventListener('reload',function(){ src.close(); location.reload(); });
  src.addEventListener('ended',function(){ src.close(); });
  src.onerror=function(){ banner.className='down'; banner.textContent='Dashboard connection lost: retrying'; };
  src.onopen=function(){ if(body.dataset.redis==='up'){ banner.className='up'; } };
})();`;

export function renderPage(p: PageOptions): string {
  const down = p.redis === 'down';
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${p.title} · orch</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>${raw(STYLE)}</style></head>
<body data-live="${p.live ?? '/live'}" data-redis="${p.redis}">
<header><strong>orch</strong>${NAV.map(([k, href, label]) => html`<a href="${href}" class="${k === p.nav ? 'on' : ''}">${label}</a>`)}<a href="/metrics">/metrics</a></header>
<div id="redis-state" class="${down ? 'down' : 'up'}" role="status">${down ? `Redis unreachable: ${p.redisProblem ?? 'no connection'}. This page shows no cluster data until it answers, and reloads by itself when it does.` : 'Redis connected'}</div>
<main><h1>${p.title}</h1>${down ? '' : p.body}</main>
<script>${raw(CLIENT)}</script></body></html>`.text;
}
