/**
 * What the dashboard never shows, wherever it appears: the values of every `env` mapping (a
 * spec's `run.env`, the block job's copy of it: tokens and passwords are passed that way), the
 * scheduler's grant MAC on a host job (jobs/grant.ts), and a nightly suite's alert webhook (its
 * URL is its credential). The names stay, so a page still says which variables a run sets.
 * Applied to bull-board's job data and scheduler templates, and to results/<id>/spec.yaml.
 */
import { isAlias, isMap, isScalar, parseDocument, visit } from 'yaml';
import { GRANT_FIELD } from '../../jobs/grant.ts';

export const REDACTED = '[redacted]';
/** Deeper than any job orch writes: past it a value is dropped, not walked. */
const MAX_DEPTH = 32;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A copy of job data (or any JSON value) with the secrets above replaced by REDACTED. */
export function redactJobData(value: unknown, depth = 0): unknown {
  if (depth > MAX_DEPTH) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactJobData(v, depth + 1));
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'env' && isRecord(v)) out[k] = Object.fromEntries(Object.keys(v).map((name) => [name, REDACTED]));
    else if (k === GRANT_FIELD && isRecord(v)) out[k] = { ...v, mac: REDACTED };
    else if (k === 'webhook' && typeof v === 'string') out[k] = REDACTED;
    else out[k] = redactJobData(v, depth + 1);
  }
  return out;
}

const UNSHOWN = `# ${REDACTED}: this spec.yaml does not parse or print back as YAML, so the dashboard does not show it (its env values could not be masked)\n`;

/**
 * spec.yaml with the value of every entry of every `env:` mapping replaced (comments and layout
 * kept). A file that does not parse is not shown at all: its secrets cannot be found in it.
 */
export function redactSpecYaml(text: string): string {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) return UNSHOWN;
  // an alias shows its anchor's text where the anchor is: the anchor is masked too
  const target = (node: unknown): unknown => (isAlias(node) ? node.resolve(doc) : node);
  visit(doc, {
    Pair(_key, pair) {
      const env = target(pair.value);
      if (!isScalar(pair.key) || pair.key.value !== 'env' || !isMap(env)) return;
      for (const entry of env.items) {
        const value = target(entry.value);
        // in place: an anchor on the value stays, and so does every alias of it
        if (isScalar(value)) value.value = REDACTED;
        else if (!isAlias(entry.value)) entry.value = doc.createNode(REDACTED);
      }
    },
  });
  try {
    return doc.toString();
  } catch {
    return UNSHOWN;
  }
}
