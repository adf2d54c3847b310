/**
 * Server-side HTML with escaping by default: `html\`<td>${value}</td>\`` escapes every
 * interpolated value unless it is itself Html (a fragment built the same way, or `raw()` for
 * markup orch made, such as the report's SVG plots). Arrays are joined.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function part(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(part).join('');
  if (value === null || value === undefined || value === false) return '';
  return esc(value);
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** Markup orch generated itself (never user input). */
export function raw(text: string): Html {
  return new Html(text);
}

/** A number for a table cell: fixed digits, '–' when it could not be computed. */
export function num(x: number | null | undefined, digits = 3): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(digits);
}

export function pct(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '–' : `${(x * 100).toFixed(digits)} %`;
}

export function ago(ms: number | null | undefined, now = Date.now()): string {
  if (!ms) return '–';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  return s < 120 ? `${s} s ago` : s < 7200 ? `${Math.round(s / 60)} min ago` : `${Math.round(s / 3600)} h ago`;
}
