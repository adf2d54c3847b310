/**
 * The SVG plots of a report:
 * - arms.svg: per-arm strip plot, every rep value with the arm's mean and its CI;
 * - drift.svg: value by run position in the block, one panel per arm on one scale, a thin line
 *   per block through its reps and the fitted drift (drift and order show as a slope or a step
 *   shared by the panels);
 * - loo.svg: the leave-one-out worths as bars with CI error bars (leave-one-out only).
 */
import { studentQuantile } from '../stats/distributions.ts';
import { num } from '../stats/format-number.ts';
import type { Analysis } from '../stats/types.ts';
import {
  esc,
  type Frame,
  fitText,
  type LinearScale,
  linearScale,
  PALETTE,
  px,
  svgDocument,
  textWidth,
  titledFrame,
  valueAxisY,
} from './svg-frame.ts';

/** Arm labels under their slots: level when the widest fits its slot, else turned 40° (the frame grows below for them). */
function slotLabels(names: readonly string[], slot: number): { rotate: boolean; room: number } {
  const widest = Math.max(0, ...names.map((n) => textWidth(n, 11)));
  if (widest <= slot - 8) return { rotate: false, room: 0 };
  const shown = Math.min(widest, MAX_LABEL);
  return { rotate: true, room: Math.ceil(shown * Math.sin(LABEL_TURN) + 8) };
}

const LABEL_TURN = (40 * Math.PI) / 180;
/** A turned label longer than this is cut with … (its full name is in its tooltip and the tables). */
const MAX_LABEL = 180;

function slotLabel(name: string, cx: number, y: number, rotate: boolean): string {
  if (!rotate) return `<text x="${px(cx)}" y="${y}" text-anchor="middle">${esc(name)}</text>`;
  return `<text transform="translate(${px(cx)} ${y - 4}) rotate(-40)" text-anchor="end"><title>${esc(name)}</title>${esc(fitText(name, MAX_LABEL, 11))}</text>`;
}

export function renderStripPlot(a: Analysis): string {
  const arms = a.arms;
  const level = Math.round((1 - a.alpha) * 100);
  const title = `${a.experiment}: rep values per arm, mean and ${level} % CI`;
  const width = Math.max(360, 110 * arms.length + 80);
  const slot = (width - 64 - 16) / Math.max(1, arms.length);
  const labels = slotLabels(
    arms.map((s) => s.arm),
    slot,
  );
  const f = titledFrame(
    { width, height: 320 + labels.room, left: 64, right: 16, top: 28, bottom: 44 + labels.room },
    title,
  );
  const all = [...a.values.map((v) => v.value), ...arms.flatMap((s) => (s.ci ? s.ci : []))];
  const y = linearScale(all, f.height - f.bottom, f.top);
  const body = valueAxisY(f, y, a.metric.name);
  arms.forEach((s, i) => {
    const cx = f.left + slot * (i + 0.5);
    const colour = PALETTE[i % PALETTE.length]!;
    const mine = a.values.filter((v) => v.arm === s.arm);
    mine.forEach((v, j) => {
      const jitter = ((j % 7) - 3) * (slot / 28);
      body.push(
        `<circle cx="${px(cx - slot / 6 + jitter)}" cy="${px(y.at(v.value))}" r="2.5" fill="${colour}" fill-opacity="0.6"><title>${esc(`${s.arm} block ${v.block} rep ${v.rep}: ${v.value}`)}</title></circle>`,
      );
    });
    if (s.ci && s.mean !== null) {
      const x = px(cx + slot / 6);
      body.push(
        `<line x1="${x}" x2="${x}" y1="${px(y.at(s.ci[0]))}" y2="${px(y.at(s.ci[1]))}" stroke="black"/>`,
        `<line x1="${px(cx + slot / 6 - 6)}" x2="${px(cx + slot / 6 + 6)}" y1="${px(y.at(s.mean))}" y2="${px(y.at(s.mean))}" stroke="black" stroke-width="2"/>`,
      );
    }
    const base = f.height - f.bottom;
    body.push(`<text x="${px(cx)}" y="${base + 14}" text-anchor="middle" fill="#666">n=${s.n}</text>`);
    body.push(slotLabel(s.arm, cx, base + 30, labels.rotate));
  });
  return svgDocument(f, title, body);
}

/** Panels of the drift plot per row: with more arms a row of panels would be too narrow to read. */
const DRIFT_COLUMNS = 3;
const PANEL = { width: 250, height: 170 };

/**
 * One panel per arm, all on one value scale and one position axis (small multiples): a thin line
 * per block through the arm's reps in run order, and the drift's fit (its slope per position
 * through the arm's mean) as a thick one. Seven arms drawn over each other in one frame were a tangle no reader could follow.
 */
export function renderDriftPlot(a: Analysis): string {
  const title = `${a.experiment}: value by run position, one panel per arm (thin: a block; thick: the fitted drift)`;
  const n = Math.max(1, a.arms.length);
  const cols = Math.min(DRIFT_COLUMNS, n);
  const rows = Math.ceil(n / cols);
  const outer = { left: 64, right: 16, top: 28, bottom: 40 };
  const f = titledFrame(
    {
      width: outer.left + outer.right + cols * PANEL.width,
      height: outer.top + outer.bottom + rows * PANEL.height,
      ...outer,
    },
    title,
  );
  const positions = a.values.map((v) => v.position);
  const values = a.values.map((v) => v.value);
  const body: string[] = [
    `<text transform="translate(12 ${px((f.top + f.height - f.bottom) / 2)}) rotate(-90)" text-anchor="middle">${esc(a.metric.name)}</text>`,
  ];
  body.push(
    `<text x="${px((f.left + f.width - f.right) / 2)}" y="${f.height - 6}" text-anchor="middle">position in block (run order)</text>`,
  );
  a.arms.forEach((s, i) => {
    const pf: Frame = { width: PANEL.width, height: PANEL.height, left: 8, right: 8, top: 20, bottom: 24 };
    const ox = f.left + (i % cols) * PANEL.width;
    const oy = f.top + Math.floor(i / cols) * PANEL.height;
    const x = linearScale(positions.length > 0 ? positions : [0], ox + pf.left, ox + pf.width - pf.right);
    const y = linearScale(values, oy + pf.height - pf.bottom, oy + pf.top);
    body.push(...driftPanel(a, s.arm, PALETTE[i % PALETTE.length]!, { ox, oy, pf, x, y, first: i % cols === 0 }));
  });
  return svgDocument(f, title, body);
}

function driftPanel(
  a: Analysis,
  arm: string,
  colour: string,
  g: { ox: number; oy: number; pf: Frame; x: LinearScale; y: LinearScale; first: boolean },
): string[] {
  const { ox, oy, pf, x, y } = g;
  const [x0, x1, y0, y1] = [ox + pf.left, ox + pf.width - pf.right, oy + pf.top, oy + pf.height - pf.bottom];
  const out = [
    `<rect x="${px(x0)}" y="${px(y0)}" width="${px(x1 - x0)}" height="${px(y1 - y0)}" fill="none" stroke="#ccc"/>`,
  ];
  for (const t of y.ticks) {
    out.push(`<line x1="${px(x0)}" x2="${px(x1)}" y1="${px(y.at(t))}" y2="${px(y.at(t))}" stroke="#eee"/>`);
    if (g.first) out.push(`<text x="${px(x0 - 4)}" y="${px(y.at(t) + 4)}" text-anchor="end">${esc(num(t))}</text>`);
  }
  for (const t of x.ticks.filter((t) => Number.isInteger(t)))
    out.push(`<text x="${px(x.at(t))}" y="${px(y1 + 14)}" text-anchor="middle">${t}</text>`);
  const d = a.drift.find((r) => r.arm === arm);
  const name = `${arm}${d?.flagged ? ' (drift)' : ''}`;
  out.push(
    `<text x="${px((x0 + x1) / 2)}" y="${px(oy + 14)}" text-anchor="middle" fill="${colour}"><title>${esc(name)}</title>${esc(fitText(name, x1 - x0, 11))}</text>`,
  );
  const mine = a.values.filter((v) => v.arm === arm);
  const line = (pts: { position: number; value: number }[], attrs: string) =>
    `<polyline fill="none" stroke="${colour}" ${attrs} points="${pts.map((v) => `${px(x.at(v.position))},${px(y.at(v.value))}`).join(' ')}"/>`;
  for (const block of new Set(mine.map((v) => v.block))) {
    const pts = mine.filter((v) => v.block === block).sort((p, q) => p.position - q.position);
    if (pts.length >= 2) out.push(line(pts, 'stroke-opacity="0.35"'));
  }
  // the drift's fit (orchestrator/stats: a log-linear slope per position) through the arm's mean
  const mean = a.arms.find((s) => s.arm === arm)?.mean ?? null;
  if (d?.slope != null && mean !== null && mine.length >= 2) {
    const ps = mine.map((v) => v.position);
    const centre = ps.reduce((t, p) => t + p, 0) / ps.length;
    const fit = [Math.min(...ps), Math.max(...ps)].map((position) => ({
      position,
      value: mean * Math.exp(d.slope! * (position - centre)),
    }));
    out.push(line(fit, 'stroke-width="2.5"'));
  }
  for (const v of mine)
    out.push(
      `<circle cx="${px(x.at(v.position))}" cy="${px(y.at(v.value))}" r="2" fill="${colour}" fill-opacity="0.7"><title>${esc(`${arm} block ${v.block} position ${v.position}: ${v.value}`)}</title></circle>`,
    );
  return out;
}

/** null when the analysis has no leave-one-out table. */
export function renderLooChart(a: Analysis): string | null {
  if (!a.loo) return null;
  const rows = a.loo.rows;
  const level = Math.round((1 - a.alpha) * 100);
  const title = `${a.experiment}: leave-one-out worths with ${level} % CI`;
  const width = Math.max(360, 100 * rows.length + 100);
  const slot = (width - 64 - 16) / Math.max(1, rows.length);
  const labels = slotLabels(
    rows.map((r) => r.toggle),
    slot,
  );
  const f = titledFrame(
    { width, height: 320 + labels.room, left: 64, right: 16, top: 28, bottom: 44 + labels.room },
    title,
  );
  const bars = rows.map((r) => {
    const half = r.worth_se !== null && r.df !== null ? studentQuantile(1 - a.alpha / 2, r.df) * r.worth_se : null;
    return { r, half };
  });
  const extent = bars.flatMap(({ r, half }) =>
    r.worth === null ? [] : half === null ? [r.worth] : [r.worth - half, r.worth + half],
  );
  const y = linearScale(extent, f.height - f.bottom, f.top, true);
  const body = valueAxisY(f, y, `worth = no_<toggle> − all_on (${a.metric.name})`);
  body.push(`<line x1="${f.left}" x2="${f.width - f.right}" y1="${px(y.at(0))}" y2="${px(y.at(0))}" stroke="black"/>`);
  bars.forEach(({ r, half }, i) => {
    const cx = f.left + slot * (i + 0.5);
    if (r.worth !== null) {
      const top = Math.min(y.at(r.worth), y.at(0));
      const h = Math.abs(y.at(r.worth) - y.at(0));
      body.push(
        `<rect x="${px(cx - slot / 4)}" y="${px(top)}" width="${px(slot / 2)}" height="${px(h)}" fill="${PALETTE[i % PALETTE.length]}" fill-opacity="0.7"><title>${esc(`${r.toggle}: ${r.worth}`)}</title></rect>`,
      );
      if (half !== null) {
        const [lo, hi] = [y.at(r.worth - half), y.at(r.worth + half)];
        body.push(
          `<line x1="${px(cx)}" x2="${px(cx)}" y1="${px(lo)}" y2="${px(hi)}" stroke="black"/>`,
          `<line x1="${px(cx - 5)}" x2="${px(cx + 5)}" y1="${px(lo)}" y2="${px(lo)}" stroke="black"/>`,
          `<line x1="${px(cx - 5)}" x2="${px(cx + 5)}" y1="${px(hi)}" y2="${px(hi)}" stroke="black"/>`,
        );
      }
    } else {
      body.push(`<text x="${px(cx)}" y="${px(y.at(0) - 6)}" text-anchor="middle" fill="#a00">not computable</text>`);
    }
    body.push(slotLabel(r.toggle, cx, f.height - f.bottom + 16, labels.rotate));
  });
  return svgDocument(f, title, body);
}

/** Every plot of the analysis by file name. */
export function renderPlots(a: Analysis): Record<string, string> {
  const out: Record<string, string> = { 'arms.svg': renderStripPlot(a), 'drift.svg': renderDriftPlot(a) };
  const loo = renderLooChart(a);
  if (loo !== null) out['loo.svg'] = loo;
  return out;
}
