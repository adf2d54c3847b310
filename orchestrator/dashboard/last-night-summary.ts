/**
 * The top of `/nightly`: per suite, what its last night found — the regressions that survived
 * the night's correction (confirmed), the slower rows that did not (slower-uncorrected: recorded,
 * not alerted), the other alerts (invalid, failed, machine change, Slurm node change) — each with a link to the
 * night's experiment on this dashboard, its report, the commits it measured and where it ran
 * (its Slurm job, nodes and partition, and its node change).
 */
import type { NightlyRow, NightlyRun } from '../../history/history-store.ts';
import { signedPct } from '../nightly/nightly-alert.ts';
import { placement } from '../nightly/node-change.ts';
import { ago, type Html, html } from './html.ts';

/** How each finding is headed, in the order a reader must see them; findings not here are not listed. */
const HEADINGS: [finding: string, heading: string, cls: string][] = [
  ['regression', 'regressed (confirmed after correction)', 'bad'],
  ['slower-uncorrected', 'slower, not confirmed after correction', ''],
  ['invalid', 'invalid', 'bad'],
  ['failed', 'failed', 'bad'],
  ['machine-change', 'the machine changed, not the code', ''],
  ['node-change', 'the Slurm nodes changed: not compared with the nights before', ''],
];

function experimentLinks(r: NightlyRow): Html {
  if (!r.experiment) return html`<span class="muted">no experiment</span>`;
  const id = encodeURIComponent(r.experiment);
  return html`<a href="/experiments/${id}">${r.experiment}</a> (<a href="/results/${id}/report.md">report</a>)`;
}

function commitList(r: NightlyRow): Html {
  const commits = Object.entries(r.commits);
  if (commits.length === 0) return html`<span class="muted">no commit recorded</span>`;
  return html`${commits.map(([where, sha], i) => html`${i > 0 ? ', ' : ''}<code class="commit" title="${where}">${sha.slice(0, 12)}</code> <span class="muted">${where}</span>`)}`;
}

function findingRow(r: NightlyRow, heading: string, cls: string): Html {
  const ci = r.ci_low !== null && r.ci_high !== null ? ` (CI ${signedPct(r.ci_low)} to ${signedPct(r.ci_high)})` : '';
  return html`<tr data-finding="${r.finding}"><td class="${cls}">${heading}</td><td>${r.spec_name ?? r.spec_file}: ${r.arm} vs ${r.reference}</td><td class="num">${signedPct(r.change)}${ci}</td><td>${experimentLinks(r)}</td><td>${commitList(r)}</td><td class="where">${placement(r)}${r.node_change ? html`<br><span class="muted">${r.node_change}</span>` : ''}</td></tr>`;
}

/** `run`: the suite's newest run; `rows`: its rows. */
export function renderLastNight(run: NightlyRun, rows: readonly NightlyRow[], now = Date.now()): Html {
  const tonight = rows.filter((r) => r.run_id === run.id);
  const found = HEADINGS.flatMap(([finding, heading, cls]) =>
    tonight.filter((r) => r.finding === finding).map((r) => findingRow(r, heading, cls)),
  );
  const when = run.ended_at
    ? `ended ${ago(run.ended_at, now)}`
    : `running, last heartbeat ${ago(run.heartbeat_at, now)}`;
  return html`<div class="last-night" data-suite="${run.suite}"><h3>${run.suite}: night of ${new Date(run.scheduled_at).toISOString().slice(0, 16).replace('T', ' ')} UTC — ${run.state}, <span class="when">${when}</span>${run.orch_commit ? html`, orch <code>${run.orch_commit.slice(0, 12)}</code>` : ''}</h3>
${
  found.length === 0
    ? html`<p class="ok">nothing regressed: ${tonight.length} comparison${tonight.length === 1 ? '' : 's'} without a finding${run.error ? html` <span class="bad">(${run.error})</span>` : ''}</p>`
    : html`<table class="findings"><tr><th>finding</th><th>comparison</th><th>change</th><th>experiment</th><th>commit</th><th>ran on</th></tr>${found}</table>`
}</div>`;
}
