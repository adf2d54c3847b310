/** A text sparkline of a series (▁ lowest … █ highest; · where a night has no number). */
const BARS = '▁▂▃▄▅▆▇█';

export function sparkline(xs: readonly (number | null)[]): string {
  const nums = xs.filter((x): x is number => x !== null && Number.isFinite(x));
  if (nums.length === 0) return '·'.repeat(xs.length);
  const lo = Math.min(...nums);
  const span = Math.max(...nums) - lo;
  return xs
    .map((x) =>
      x === null || !Number.isFinite(x)
        ? '·'
        : BARS[span === 0 ? 3 : Math.round(((x - lo) / span) * (BARS.length - 1))],
    )
    .join('');
}
