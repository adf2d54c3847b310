/**
 * The spec hash: sha256 over the canonical JSON of the validated, compiled spec (defaults
 * applied, object keys sorted recursively, array order kept). Reformatting the YAML, reordering
 * keys or spelling a default out leaves it unchanged; any change of meaning changes it.
 */
import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every depth; `undefined` members are left out, as JSON does. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

export function specHash(spec: unknown): string {
  return createHash('sha256').update(canonicalJson(spec)).digest('hex');
}
