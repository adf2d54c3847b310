/**
 * The little SVG toolkit of the report plots: a plot area with a linear value axis, nice ticks,
 * escaped text. Plots are plain SVG 1.1 strings, no scripts, readable in any browser or PR.
 */
import { num } from '../stats/format-number.ts';

export const PALETTE = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#9467bd',
  '#ff7f0e',
  '#17becf',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
];

export const esc = (s: string): string =>
  s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** Coordinates are rounded to 0.01 px so the text stays short and stable. */
export const px = (x: number): string => String(Math.round(x * 100) / 100);

export interface Frame {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

export interface LinearScale {
  lo: number;
  hi: number;
  ticks: number[];
  /** Value → pixel along the axis. */
  at(v: number): number;
}

/** A linear scale over [min, max] of `values` padded 5 %, with 4–6 round ticks. */
export function linearScale(
  values: readonly number[],
  pixelFrom: number,
  pixelTo: number,
  includeZero = false,
): LinearScale {
  const finite = values.filter(Number.isFinite);
  let lo = finite.length > 0 ? Math.min(...finite) : 0;
  let hi = finite.length > 0 ? Math.max(...finite) : 1;
  if (includeZero) {
    lo = Math.min(lo, 0);
    hi = Math.max(hi, 0);
  }
  // a range below the values' own precision (equal values but for rounding) is one value: its
  // ticks would step by less than a unit in the last place, and never reach the end
  if (hi - lo <= Math.max(Math.abs(hi), Math.abs(lo)) * 1e-9) {
    const d = Math.abs(hi) > 0 ? Math.abs(hi) * 0.05 : 1;
    lo -= d;
    hi += d;
  }
  const pad = (hi - lo) * 0.05;
  lo -= pad;
  hi += pad;
  const raw = (hi - lo) / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const ticks: number[] = [];
  const first = Math.ceil(lo / step);
  for (let i = first; i * step <= hi + step * 1e-9 && ticks.length < MAX_TICKS; i++)
    ticks.push(Number((i * step).toPrecision(12)));
  const at = (v: number) => pixelFrom + ((v - lo) / (hi - lo)) * (pixelTo - pixelFrom);
  return { lo, hi, ticks, at };
}

/** More ticks than an axis of 5 steps can have: a bound, whatever the floating point does. */
const MAX_TICKS = 12;

/**
 * The width a string takes in the plots' sans-serif at `fontSize`, from per-character classes of
 * its glyphs (a little wider than Helvetica, DejaVu Sans and Arial measure): an SVG has no text
 * layout of its own, so a title or a label that would not fit is wrapped, rotated or cut before it
 * is drawn, never clipped by the viewer.
 */
export function textWidth(s: string, fontSize: number): number {
  let em = 0;
  for (const ch of s) {
    if (/[ijlI.,:;'|!()[\] ]/.test(ch)) em += 0.32;
    else if (/[ft1r-]/.test(ch)) em += 0.42;
    else if (/[mwMW@%]/.test(ch)) em += 0.92;
    else if (/[A-Z]/.test(ch)) em += 0.72;
    else em += 0.6;
  }
  return em * fontSize;
}

export const TITLE_SIZE = 13;
const TITLE_LINE = 16;

/** The title's words in lines that each fit `width` (a word longer than a line is a line of its own, cut). */
export function wrapText(text: string, width: number, fontSize: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const next = line ? `${line} ${word}` : word;
    if (line && textWidth(next, fontSize) > width) {
      lines.push(line);
      line = word;
    } else line = next;
  }
  lines.push(line);
  return lines.map((l) => fitText(l, width, fontSize));
}

/** `s`, cut with … to fit `width`. */
export function fitText(s: string, width: number, fontSize: number): string {
  if (textWidth(s, fontSize) <= width) return s;
  let out = s;
  while (out.length > 1 && textWidth(`${out}…`, fontSize) > width) out = out.slice(0, -1);
  return `${out}…`;
}

/** The frame made room for `title` wrapped to its width: the plot area starts below the title's last line. */
export function titledFrame(f: Frame, title: string): Frame & { titleLines: string[] } {
  const titleLines = wrapText(title, f.width - 16, TITLE_SIZE);
  return {
    ...f,
    top: f.top + TITLE_LINE * (titleLines.length - 1),
    height: f.height + TITLE_LINE * (titleLines.length - 1),
    titleLines,
  };
}

/** A frame from `titledFrame` draws its title in the room it made; any other wraps it in place. */
export function svgDocument(f: Frame & { titleLines?: string[] }, title: string, body: readonly string[]): string {
  const lines = f.titleLines ?? wrapText(title, f.width - 16, TITLE_SIZE);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${f.width}" height="${f.height}" viewBox="0 0 ${f.width} ${f.height}" font-family="sans-serif" font-size="11">`,
    `<title>${esc(title)}</title>`,
    `<rect width="${f.width}" height="${f.height}" fill="white"/>`,
    ...lines.map(
      (l, i) =>
        `<text x="${px(f.width / 2)}" y="${16 + TITLE_LINE * i}" text-anchor="middle" font-size="${TITLE_SIZE}">${esc(l)}</text>`,
    ),
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

/** Horizontal grid lines and labels of a vertical value axis. */
export function valueAxisY(f: Frame, s: LinearScale, label: string): string[] {
  const out = s.ticks.map(
    (t) =>
      `<line x1="${f.left}" x2="${f.width - f.right}" y1="${px(s.at(t))}" y2="${px(s.at(t))}" stroke="#ddd"/>` +
      `<text x="${f.left - 4}" y="${px(s.at(t) + 4)}" text-anchor="end">${esc(num(t))}</text>`,
  );
  const midY = (f.top + f.height - f.bottom) / 2;
  out.push(`<text transform="translate(12 ${px(midY)}) rotate(-90)" text-anchor="middle">${esc(label)}</text>`);
  return out;
}
