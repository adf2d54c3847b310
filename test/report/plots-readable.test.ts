/**
 * The report's plots with many arms and long names (orchestrator/report/render-plots.ts): every
 * title line and label lies inside the drawing (a title was clipped at "…mean and 9" in a 360 px
 * strip plot), arm labels that would overlap are turned, and the drift plot draws one panel per
 * arm (seven arms' lines over each other were unreadable). Text extents are estimated with the
 * same glyph classes the renderer wraps by (svg-frame.ts textWidth).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderPlots } from '../../orchestrator/report/render-plots.ts';
import { TITLE_SIZE, textWidth } from '../../orchestrator/report/svg-frame.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import { abWithAa, looExperiment } from '../stats/fixtures.ts';

const LONG_ID = 'decode-graphs-vs-eager-nightly-20261203-152939-17';

export function manyArms() {
  const input = looExperiment(7, { experiment: LONG_ID }, (arms) => [
    { ...arms[1]!, name: 'all_on_with_the_persistent_kernel_variant', aa_of: undefined },
    { ...arms[1]!, name: 'all_on_nccl_overlap_on_second_stream', aa_of: undefined },
  ]);
  return analyzeExperiment(input);
}

interface Text {
  x: number;
  y: number;
  anchor: string;
  rotate: number;
  size: number;
  text: string;
}

function texts(svg: string): Text[] {
  const out: Text[] = [];
  for (const m of svg.matchAll(/<text ([^>]*)>(?:<title>[^<]*<\/title>)?([^<]*)<\/text>/g)) {
    const attrs = m[1]!;
    const get = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(attrs)?.[1];
    const t = /translate\(([-\d.]+) ([-\d.]+)\)(?: rotate\(([-\d.]+)\))?/.exec(get('transform') ?? '');
    const text = m[2]!
      .replaceAll('&amp;', '&')
      .replaceAll('&lt;', '<')
      .replaceAll('&gt;', '>')
      .replaceAll('&quot;', '"');
    out.push({
      x: Number(t ? t[1] : get('x')),
      y: Number(t ? t[2] : get('y')),
      anchor: get('text-anchor') ?? 'start',
      rotate: Number(t?.[3] ?? 0),
      size: Number(get('font-size') ?? 11),
      text,
    });
  }
  return out;
}

/** The corners of a text's box: along its baseline from the anchor, turned by its rotation. */
function corners(t: Text): [number, number][] {
  const w = textWidth(t.text, t.size);
  const from = t.anchor === 'middle' ? -w / 2 : t.anchor === 'end' ? -w : 0;
  const rad = (t.rotate * Math.PI) / 180;
  return [from, from + w].flatMap((dx) =>
    [0, -t.size * 0.8].map((dy): [number, number] => [
      t.x + dx * Math.cos(rad) - dy * Math.sin(rad),
      t.y + dx * Math.sin(rad) + dy * Math.cos(rad),
    ]),
  );
}

function assertInside(a: ReturnType<typeof analyzeExperiment>): void {
  for (const [file, svg] of Object.entries(renderPlots(a))) {
    const width = Number(/width="(\d+)"/.exec(svg)![1]);
    const height = Number(/height="(\d+)"/.exec(svg)![1]);
    const all = texts(svg);
    for (const t of all) {
      for (const [x, y] of corners(t))
        assert.ok(
          x >= 0 && x <= width && y >= 0 && y <= height,
          `${file}: "${t.text}" reaches (${x.toFixed(0)}, ${y.toFixed(0)}) outside ${width}×${height}`,
        );
    }
    const title = /<title>([^<]*)<\/title>/.exec(svg)![1]!;
    const lines = all.filter((t) => t.size === TITLE_SIZE);
    assert.equal(lines.map((t) => t.text).join(' '), title, `${file}: the whole title is drawn`);
    assert.ok(
      lines.every((t) => textWidth(t.text, TITLE_SIZE) <= width - 16),
      `${file}: each title line fits`,
    );
    if (textWidth(title, TITLE_SIZE) > width - 16)
      assert.ok(lines.length >= 2, `${file}: a title longer than the plot is wrapped`);
  }
}

test('3 arms and a long experiment id: the title wrapped whole, nothing outside the plot', () => {
  const a = analyzeExperiment(abWithAa(3, {}, { experiment: LONG_ID }));
  assert.ok(
    textWidth(`${LONG_ID}: rep values per arm, mean and 95 % CI`, TITLE_SIZE) > 360,
    'the title is wider than the narrowest plot',
  );
  assertInside(a);
});

test('8 arms, long names: every text inside its plot, labels turned', () => {
  const a = manyArms();
  assert.equal(a.arms.length, 8);
  assertInside(a);
  const strip = texts(renderPlots(a)['arms.svg']!);
  const armLabels = strip.filter((t) => a.arms.some((s) => t.text.startsWith(s.arm.slice(0, 10))) && t.size === 11);
  assert.ok(
    armLabels.every((t) => t.rotate === -40),
    'labels wider than their slot are turned',
  );
});

test('the drift plot: one panel per arm, each named, on one value scale', () => {
  const a = manyArms();
  const svg = renderPlots(a)['drift.svg']!;
  assert.equal(svg.match(/stroke="#ccc"/g)?.length, a.arms.length, 'a panel per arm');
  const names = texts(svg).map((t) => t.text);
  for (const s of a.arms)
    assert.ok(
      names.some((n) => n === s.arm || (n.endsWith('…') && s.arm.startsWith(n.slice(0, -1)))),
      `panel of ${s.arm}`,
    );
});
