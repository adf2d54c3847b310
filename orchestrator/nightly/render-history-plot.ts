/**
 * One comparison's nights as an SVG (the report's toolkit, orchestrator/report/svg-frame.ts):
 * above, the paired change of arm against reference per night with its CI as a band and the
 * zero line; below, the absolute values of both arms. A night that raised an alert is ringed
 * in black in both panels, its finding in the tooltip; a point links to its night's experiment
 * when the caller says where. The x axis is the scheduled time, each night labelled (up to
 * seven, spread); the legend is under the plot, its labels whole.
 */
import type { NightlyRow } from '../../history/history-store.ts';
import { esc, type Frame, linearScale, PALETTE, px, svgDocument, valueAxisY } from '../report/svg-frame.ts';
import { signedPct } from './nightly-alert.ts';
import { placement } from './node-change.ts';

/** The findings that raise an alert (night-findings.ts); absolute-shift is recorded only. */
const ALERTED = new Set(['regression', 'invalid', 'failed', 'machine-change', 'node-change']);
/** The alert ring: black, so it is never read as one of the lines (the arm's line is PALETTE[1], a red). */
const RING = '#111827';
/** Night labels on the x axis, at most: each is about 60 px wide at the toolkit's 11 px font. */
const MAX_NIGHT_LABELS = 7;
const LEGEND_ROW = 15;

const day = (t: number) => new Date(t).toISOString().slice(0, 16).replace('T', ' ');

/** The nights that get a label: all of them up to MAX_NIGHT_LABELS, else evenly spread, first and last included. */
function labelledNights(times: readonly number[]): number[] {
  const distinct = [...new Set(times)];
  if (distinct.length <= MAX_NIGHT_LABELS) return distinct;
  return [
    ...new Set(
      Array.from(
        { length: MAX_NIGHT_LABELS },
        (_, i) => distinct[Math.round((i * (distinct.length - 1)) / (MAX_NIGHT_LABELS - 1))]!,
      ),
    ),
  ];
}

/** Tick marks and labels under the plot: the date, and the time of day under it when the nights differ in it. */
function nightAxis(f: Frame, x: (t: number) => number, times: readonly number[]): string[] {
  const clock = (t: number) => new Date(t).toISOString().slice(11, 16);
  const clocks = new Set(times.map(clock));
  const y = f.height - f.bottom;
  return labelledNights(times).map((t) => {
    const date = new Date(t).toISOString().slice(0, 10);
    const at = px(x(t));
    return (
      `<line class="night-tick" x1="${at}" x2="${at}" y1="${y}" y2="${y + 4}" stroke="#888"/>` +
      `<text class="night-label" x="${at}" y="${y + 15}" text-anchor="middle">${esc(date)}${clocks.size > 1 ? `<tspan x="${at}" dy="12">${esc(clock(t))}</tspan>` : ''}</text>`
    );
  });
}

/** Where a night's point links (its experiment's page); null: no link. */
export type NightLink = (row: NightlyRow) => string | null;

/** `rows`: one comparison's rows (same spec, arm and reference), oldest first. */
export function renderHistoryPlot(rows: NightlyRow[], link: NightLink = () => null): string {
  const first = rows[0]!;
  const legend = [
    [PALETTE[0]!, `change ${first.arm} vs ${first.reference} (CI band)`],
    [PALETTE[1]!, first.arm],
    [PALETTE[2]!, first.reference],
    [RING, 'alert (ringed)'],
  ] as const;
  // the legend sits under the x axis, one full line per entry: labels are never cut
  const legendTop = 420 - 8;
  const f: Frame = {
    width: 640,
    height: legendTop + legend.length * LEGEND_ROW + 8,
    left: 64,
    right: 24,
    top: 28,
    bottom: 40 + legend.length * LEGEND_ROW + 8,
  };
  const split = 220;
  const changePanel: Frame = { ...f, bottom: f.height - split + 12 };
  const absPanel: Frame = { ...f, top: split + 12 };
  const times = rows.map((r) => r.scheduled_at);
  const x = linearScale(times, f.left, f.width - f.right);
  const pct = (v: number | null) => (v === null ? NaN : v * 100);
  const cy = linearScale(
    rows.flatMap((r) => [pct(r.change), pct(r.ci_low), pct(r.ci_high)]),
    changePanel.height - changePanel.bottom,
    changePanel.top,
    true,
  );
  const ay = linearScale(
    rows.flatMap((r) => [r.arm_value ?? NaN, r.reference_value ?? NaN]),
    absPanel.height - absPanel.bottom,
    absPanel.top,
  );
  const body = [...valueAxisY(changePanel, cy, 'change %'), ...valueAxisY(absPanel, ay, first.metric ?? 'value')];
  body.push(`<line x1="${f.left}" x2="${f.width - f.right}" y1="${px(cy.at(0))}" y2="${px(cy.at(0))}" stroke="#888"/>`);

  const withCi = rows.filter((r) => r.ci_low !== null && r.ci_high !== null);
  if (withCi.length > 0) {
    const upper = withCi.map((r) => `${px(x.at(r.scheduled_at))},${px(cy.at(pct(r.ci_high)))}`);
    const lower = withCi.map((r) => `${px(x.at(r.scheduled_at))},${px(cy.at(pct(r.ci_low)))}`).reverse();
    body.push(
      `<polygon class="ci-band" points="${[...upper, ...lower].join(' ')}" fill="${PALETTE[0]}" fill-opacity="0.18" stroke="none"/>`,
    );
  }
  const line = (pick: (r: NightlyRow) => number | null, y: (v: number) => number, colour: string, cls: string) => {
    const pts = rows.filter((r) => pick(r) !== null).map((r) => `${px(x.at(r.scheduled_at))},${px(y(pick(r)!))}`);
    if (pts.length > 1)
      body.push(`<polyline class="${cls}" fill="none" stroke="${colour}" points="${pts.join(' ')}"/>`);
    for (const r of rows.filter((q) => pick(q) !== null)) {
      const alerted = r.finding !== null && ALERTED.has(r.finding);
      const commits = Object.values(r.commits)
        .map((c) => c.slice(0, 10))
        .join(', ');
      const tip = `${day(r.scheduled_at)} ${r.verdict ?? r.experiment_state} ${signedPct(r.change)}${r.finding ? ` [${r.finding}]` : ''}${r.experiment ? ` ${r.experiment}` : ''}${commits ? ` commit ${commits}` : ''}${r.slurm ? ` on ${placement(r)}` : ''}`;
      const cx = px(x.at(r.scheduled_at));
      const pyv = px(y(pick(r)!));
      const point =
        `<circle cx="${cx}" cy="${pyv}" r="3" fill="${colour}"><title>${esc(tip)}</title></circle>` +
        (alerted
          ? `<circle class="alert" cx="${cx}" cy="${pyv}" r="7" fill="none" stroke="${RING}" stroke-width="2"><title>${esc(`alert: ${tip}`)}</title></circle>`
          : '');
      const href = link(r);
      body.push(href ? `<a class="night-link" href="${esc(href)}">${point}</a>` : point);
    }
  };
  line((r) => (r.change === null ? null : r.change * 100), cy.at, PALETTE[0]!, 'change');
  line((r) => r.arm_value, ay.at, PALETTE[1]!, 'arm-value');
  line((r) => r.reference_value, ay.at, PALETTE[2]!, 'reference-value');

  legend.forEach(([colour, label], i) => {
    const y = legendTop + LEGEND_ROW * i;
    body.push(
      colour === RING
        ? `<circle cx="${f.left + 4}" cy="${y - 4}" r="5" fill="none" stroke="${RING}" stroke-width="2"/>`
        : `<circle cx="${f.left + 4}" cy="${y - 4}" r="4" fill="${colour}"/>`,
      `<text class="legend" x="${f.left + 16}" y="${y}">${esc(label)}</text>`,
    );
  });
  body.push(...nightAxis(f, x.at, times));
  return svgDocument(f, `${first.spec_name ?? first.spec_file}: ${first.arm} vs ${first.reference}`, body);
}
