/**
 * The SVG plots of a report:
 * - arms.svg: per-arm strip plot, every rep value with the arm's mean and its CI;
 * - drift.svg: value by run position in the block, one colour per arm, a thin line per block
 *   through its reps (drift and order show as a slope or a step shared by the arms);
 * - loo.svg: the leave-one-out worths as bars with CI error bars (leave-one-out only).
 */
import { studentQuantile } from '../stats/distributions.ts';
import type { Analysis } from '../stats/types.ts';
import { esc, type Frame, linearScale, PALETTE, px, svgDocument, valueAxisY } from './svg-frame.ts';

export function renderStripPlot(a: Analysis): string {
  const arms = a.arms;
  const f: Frame = { width: Math.max(360, 110 * arms.length + 80), height: 320, left: 64, right: 16, top: 28, bottom: 44 };
  const all = [...a.values.map((v) => v.value), ...arms.flatMap((s) => (s.ci ? s.ci : []))];
  const y = linearScale(all, f.height - f.bottom, f.top);
  const slot = (f.width - f.left - f.right) / Math.max(1, arms.length);
  const body = valueAxisY(f, y, a.metric.name);
  arms.forEach((s, i) => {
    const cx = f.left + slot * (i + 0.5);
    const colour = PALETTE[i % PALETTE.length]!;
    const mine = a.values.filter((v) => v.arm === s.arm);
    mine.forEach((v, j) => {
      const jitter = ((j % 7) - 3) * (slot / 28);
      body.push(`<circle cx="${px(cx - slot / 6 + jitter)}" cy="${px(y.at(v.value))}" r="2.5" fill="${colour}" fill-opacity="0.6"><title>${esc(`${s.arm} block ${v.block} rep ${v.rep}: ${v.value}`)}</title></circle>`);
    });
    if (s.ci && s.mean !== null) {
      const x = px(cx + slot / 6);
      body.push(
        `<line x1="${x}" x2="${x}" y1="${px(y.at(s.ci[0]))}" y2="${px(y.at(s.ci[1]))}" stroke="black"/>`,
        `<line x1="${px(cx + slot / 6 - 6)}" x2="${px(cx + slot / 6 + 6)}" y1="${px(y.at(s.mean))}" y2="${px(y.at(s.mean))}" stroke="black" stroke-width="2"/>`,
      );
    }
    body.push(`<text x="${px(cx)}" y="${f.height - f.bottom + 16}" text-anchor="middle">${esc(s.arm)}</text>`);
    body.push(`<text x="${px(cx)}" y="${f.height - f.bottom + 30}" text-anchor="middle" fill="#666">n=${s.n}</text>`);
  });
  const level = Math.round((1 - a.alpha) * 100);
  return svgDocument(f, `${a.experiment}: rep values per arm, mean and ${level} % CI`, body);
}

export function renderDriftPlot(a: Analysis): string {
  const f: Frame = { width: 560, height: 320, left: 64, right: 120, top: 28, bottom: 40 };
  const positions = a.values.map((v) => v.position);
  const x = linearScale(positions.length > 0 ? positions : [0], f.left, f.width - f.right);
  const y = linearScale(a.values.map((v) => v.value), f.height - f.bottom, f.top);
  const body = valueAxisY(f, y, a.metric.name);
  for (const t of x.ticks.filter((t) => Number.isInteger(t))) {
    body.push(`<text x="${px(x.at(t))}" y="${f.height - f.bottom + 14}" text-anchor="middle">${t}</text>`);
  }
  body.push(`<text x="${px((f.left + f.width - f.right) / 2)}" y="${f.height - 6}" text-anchor="middle">position in block (run order)</text>`);
  a.arms.forEach((s, i) => {
    const colour = PALETTE[i % PALETTE.length]!;
    const mine = a.values.filter((v) => v.arm === s.arm);
    // One thin line per block through the arm's reps in run order: the within-block trend.
    for (const block of new Set(mine.map((v) => v.block))) {
      const pts = mine.filter((v) => v.block === block).sort((p, q) => p.position - q.position);
      if (pts.length < 2) continue;
      body.push(`<polyline fill="none" stroke="${colour}" stroke-opacity="0.4" points="${pts.map((v) => `${px(x.at(v.position))},${px(y.at(v.value))}`).join(' ')}"/>`);
    }
    for (const v of mine) {
      body.push(`<circle cx="${px(x.at(v.position))}" cy="${px(y.at(v.value))}" r="2.5" fill="${colour}"><title>${esc(`${s.arm} block ${v.block} position ${v.position}: ${v.value}`)}</title></circle>`);
    }
    const d = a.drift.find((r) => r.arm === s.arm);
    const legend = `${s.arm}${d?.flagged ? ' (drift)' : ''}`;
    body.push(
      `<circle cx="${f.width - f.right + 12}" cy="${f.top + 14 * i + 6}" r="4" fill="${colour}"/>`,
      `<text x="${f.width - f.right + 20}" y="${f.top + 14 * i + 10}">${esc(legend)}</text>`,
    );
  });
  return svgDocument(f, `${a.experiment}: value by run position`, body);
}

/** null when the analysis has no leave-one-out table. */
export function renderLooChart(a: Analysis): string | null {
  if (!a.loo) return null;
  const rows = a.loo.rows;
  const f: Frame = { width: Math.max(360, 100 * rows.length + 100), height: 320, left: 64, right: 16, top: 28, bottom: 44 };
  const bars = rows.map((r) => {
    const half = r.worth_se !== null && r.df !== null ? studentQuantile(1 - a.alpha / 2, r.df) * r.worth_se : null;
    return { r, half };
  });
  const extent = bars.flatMap(({ r, half }) => (r.worth === null ? [] : half === null ? [r.worth] : [r.worth - half, r.worth + half]));
  const y = linearScale(extent, f.height - f.bottom, f.top, true);
  const slot = (f.width - f.left - f.right) / Math.max(1, rows.length);
  const body = valueAxisY(f, y, `worth = no_<toggle> − all_on (${a.metric.name})`);
  body.push(`<line x1="${f.left}" x2="${f.width - f.right}" y1="${px(y.at(0))}" y2="${px(y.at(0))}" stroke="black"/>`);
  bars.forEach(({ r, half }, i) => {
    const cx = f.left + slot * (i + 0.5);
    if (r.worth !== null) {
      const top = Math.min(y.at(r.worth), y.at(0));
      const h = Math.abs(y.at(r.worth) - y.at(0));
      body.push(`<rect x="${px(cx - slot / 4)}" y="${px(top)}" width="${px(slot / 2)}" height="${px(h)}" fill="${PALETTE[i % PALETTE.length]}" fill-opacity="0.7"><title>${esc(`${r.toggle}: ${r.worth}`)}</title></rect>`);
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
    body.push(`<text x="${px(cx)}" y="${f.height - f.bottom + 16}" text-anchor="middle">${esc(r.toggle)}</text>`);
  });
  const level = Math.round((1 - a.alpha) * 100);
  return svgDocument(f, `${a.experiment}: leave-one-out worths with ${level} % CI`, body);
}

/** Every plot of the analysis by file name. */
export function renderPlots(a: Analysis): Record<string, string> {
  const out: Record<string, string> = { 'arms.svg': renderStripPlot(a), 'drift.svg': renderDriftPlot(a) };
  const loo = renderLooChart(a);
  if (loo !== null) out['loo.svg'] = loo;
  return out;
}
