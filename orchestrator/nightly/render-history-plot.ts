/**
 * One comparison's nights as an SVG (the report's toolkit, orchestrator/report/svg-frame.ts):
 * above, the paired change of arm against reference per night with its CI as a band and the
 * zero line; below, the absolute values of both arms. A night that raised an alert is ringed
 * in red in both panels, its finding in the tooltip. The x axis is the scheduled time.
 */
import type { NightlyRow } from '../../history/history-store.ts';
import { esc, linearScale, PALETTE, px, svgDocument, valueAxisY, type Frame } from '../report/svg-frame.ts';
import { signedPct } from './nightly-alert.ts';

/** The findings that raise an alert (night-findings.ts); absolute-shift is recorded only. */
const ALERTED = new Set(['regression', 'invalid', 'failed', 'machine-change']);

const day = (t: number) => new Date(t).toISOString().slice(0, 16).replace('T', ' ');

/** `rows`: one comparison's rows (same spec, arm and reference), oldest first. */
export function renderHistoryPlot(rows: NightlyRow[]): string {
  const first = rows[0]!;
  const f: Frame = { width: 640, height: 420, left: 64, right: 110, top: 28, bottom: 40 };
  const split = 220;
  const changePanel: Frame = { ...f, bottom: f.height - split + 12 };
  const absPanel: Frame = { ...f, top: split + 12 };
  const times = rows.map((r) => r.scheduled_at);
  const x = linearScale(times, f.left, f.width - f.right);
  const pct = (v: number | null) => (v === null ? NaN : v * 100);
  const cy = linearScale(rows.flatMap((r) => [pct(r.change), pct(r.ci_low), pct(r.ci_high)]), changePanel.height - changePanel.bottom, changePanel.top, true);
  const ay = linearScale(rows.flatMap((r) => [r.arm_value ?? NaN, r.reference_value ?? NaN]), absPanel.height - absPanel.bottom, absPanel.top);
  const body = [...valueAxisY(changePanel, cy, 'change %'), ...valueAxisY(absPanel, ay, first.metric ?? 'value')];
  body.push(`<line x1="${f.left}" x2="${f.width - f.right}" y1="${px(cy.at(0))}" y2="${px(cy.at(0))}" stroke="#888"/>`);

  const withCi = rows.filter((r) => r.ci_low !== null && r.ci_high !== null);
  if (withCi.length > 0) {
    const upper = withCi.map((r) => `${px(x.at(r.scheduled_at))},${px(cy.at(pct(r.ci_high)))}`);
    const lower = withCi.map((r) => `${px(x.at(r.scheduled_at))},${px(cy.at(pct(r.ci_low)))}`).reverse();
    body.push(`<polygon class="ci-band" points="${[...upper, ...lower].join(' ')}" fill="${PALETTE[0]}" fill-opacity="0.18" stroke="none"/>`);
  }
  const line = (pick: (r: NightlyRow) => number | null, y: (v: number) => number, colour: string, cls: string) => {
    const pts = rows.filter((r) => pick(r) !== null).map((r) => `${px(x.at(r.scheduled_at))},${px(y(pick(r)!))}`);
    if (pts.length > 1) body.push(`<polyline class="${cls}" fill="none" stroke="${colour}" points="${pts.join(' ')}"/>`);
    for (const r of rows.filter((q) => pick(q) !== null)) {
      const alerted = r.finding !== null && ALERTED.has(r.finding);
      const tip = `${day(r.scheduled_at)} ${r.verdict ?? r.experiment_state} ${signedPct(r.change)}${r.finding ? ` [${r.finding}]` : ''}`;
      body.push(`<circle cx="${px(x.at(r.scheduled_at))}" cy="${px(y(pick(r)!))}" r="3" fill="${colour}"><title>${esc(tip)}</title></circle>`);
      if (alerted) body.push(`<circle class="alert" cx="${px(x.at(r.scheduled_at))}" cy="${px(y(pick(r)!))}" r="7" fill="none" stroke="#d62728" stroke-width="2"><title>${esc(`alert: ${tip}`)}</title></circle>`);
    }
  };
  line((r) => (r.change === null ? null : r.change * 100), cy.at, PALETTE[0]!, 'change');
  line((r) => r.arm_value, ay.at, PALETTE[1]!, 'arm-value');
  line((r) => r.reference_value, ay.at, PALETTE[2]!, 'reference-value');

  const legend = [
    [PALETTE[0]!, `change ${first.arm} vs ${first.reference} (CI band)`],
    [PALETTE[1]!, first.arm],
    [PALETTE[2]!, first.reference],
    ['#d62728', 'alert'],
  ] as const;
  legend.forEach(([colour, label], i) => {
    body.push(
      `<circle cx="${f.width - f.right + 12}" cy="${f.top + 14 * i + 6}" r="4" fill="${colour}"/>`,
      `<text x="${f.width - f.right + 20}" y="${f.top + 14 * i + 10}">${esc(label.length > 14 ? `${label.slice(0, 13)}…` : label)}</text>`,
    );
  });
  body.push(
    `<text x="${f.left}" y="${f.height - 6}">${esc(day(times[0]!))}</text>`,
    `<text x="${f.width - f.right}" y="${f.height - 6}" text-anchor="end">${esc(day(times.at(-1)!))}</text>`,
  );
  return svgDocument(f, `${first.spec_name ?? first.spec_file}: ${first.arm} vs ${first.reference}`, body);
}
