/** Number formatting shared by the statistics' sentences and the reports: never "NaN". */

/** 0.0123 → "1.23 %"; null or non-finite → "—". */
export function pct(x: number | null | undefined, digits = 2): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  return `${(x * 100).toFixed(digits)} %`;
}

/** Like pct with an explicit sign: "+1.23 %", "−0.40 %". */
export function signedPct(x: number | null | undefined, digits = 2): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  const s = (Math.abs(x) * 100).toFixed(digits);
  return `${x < 0 ? '−' : '+'}${s} %`;
}

/** A value with `sig` significant digits; null or non-finite → "—". */
export function num(x: number | null | undefined, sig = 4): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  if (x === 0) return '0';
  const a = Math.abs(x);
  if (a >= 1e6 || a < 1e-4) return x.toExponential(sig - 1);
  return Number(x.toPrecision(sig)).toString();
}

/** A p-value: "< 0.0001" below that, else two significant digits. */
export function pValue(p: number | null | undefined): string {
  if (p === null || p === undefined || !Number.isFinite(p)) return '—';
  if (p < 1e-4) return '< 0.0001';
  return Number(p.toPrecision(2)).toString();
}

/** "p = 0.031" or "p < 0.0001" for a sentence. */
export function pClause(p: number | null | undefined): string {
  const v = pValue(p);
  return v.startsWith('<') ? `p ${v}` : `p = ${v}`;
}
