/**
 * The one door for a record at rest: what orch wrote to Redis or to a file and now reads back
 * (an experiment's plan and spec, a block's state, a build's failure record, a Lua script's
 * reply). Each is parsed with its schema, so a record written by hand or by another version
 * fails here, naming the key or file and the schema path, instead of as a TypeError later in
 * whatever acted on it. Pure (no Redis, no files), so every room that reads a record uses it.
 */
import type { z } from 'zod';
import { OrchError } from './errors.ts';
import { quoteLine } from './line-limit.ts';
import { describeIssues } from './schema-issues.ts';

const HINT =
  'the record was written by hand or by another orch version: delete it (or write it again as its schema says)';

/** `raw` (JSON text read from `where`: a key and field, a file) through `schema`. */
export function parseStored<S extends z.ZodType>(schema: S, raw: string, where: string): z.infer<S> {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw new OrchError('STORED_RECORD_INVALID', `${where} is not JSON: ${quoteLine(raw)}`, { hint: HINT, cause: err });
  }
  return checkStored(schema, json, where, raw);
}

/** An already-decoded value read from `where` (a Lua reply, a JSON line) through `schema`. */
export function checkStored<S extends z.ZodType>(schema: S, value: unknown, where: string, raw?: string): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const shown = raw ?? JSON.stringify(value) ?? String(value);
  throw new OrchError('STORED_RECORD_INVALID', `${where}: ${describeIssues(r.error)}: ${quoteLine(shown)}`, {
    hint: HINT,
    cause: r.error,
  });
}
