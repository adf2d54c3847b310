/**
 * zod issues → SpecIssues a user can act on: the dotted path, the YAML line, what is wrong in
 * words, and a fix (did-you-mean for unknown keys, enum values and discriminators).
 */
import type { z } from 'zod';
import { suggestion } from './did-you-mean.ts';
import type { SpecIssue } from './errors.ts';
import { knownKeysOf } from './spec-schema/strict-object.ts';
import { formatPath, type PathSegment, type YamlSource } from './yaml-source.ts';

export function zodIssuesToSpecIssues(file: string, source: YamlSource, error: z.ZodError): SpecIssue[] {
  const out: SpecIssue[] = [];
  const at = (path: readonly PathSegment[], message: string, fix?: string): void => {
    out.push({ file, line: source.lineOf(path), path: formatPath(path), message, ...(fix ? { fix } : {}) });
  };
  for (const issue of error.issues) {
    const path = issue.path.filter((p): p is PathSegment => typeof p !== 'symbol');
    const value = valueAt(source.data, path);
    switch (issue.code) {
      case 'unrecognized_keys': {
        const known = knownKeysOf(value);
        for (const key of issue.keys) {
          at([...path, key], `unknown key "${key}"`, known.length > 0 ? suggestion(key, known) : 'remove it');
        }
        break;
      }
      case 'invalid_value': {
        const allowed = issue.values.map(String);
        if (value === undefined) at(path, 'missing required key', `add it: ${allowed.join(' | ')}`);
        else at(path, `unknown value ${JSON.stringify(value)}`, suggestion(String(value), allowed, true));
        break;
      }
      case 'invalid_union': {
        const disc = (issue as { discriminator?: string; options?: unknown[] }).discriminator;
        const options = ((issue as { options?: unknown[] }).options ?? []).map(String);
        if (disc !== undefined && value === undefined) {
          at(path, `missing "${disc}"`, `add ${disc}: ${options.join(' | ')}`);
        } else if (disc !== undefined) {
          at(path, `unknown ${disc} ${JSON.stringify(value)}`, suggestion(String(value), options, true));
        } else {
          at(path, issue.message);
        }
        break;
      }
      case 'invalid_type':
        if (value === undefined)
          at(path, 'missing required key', `add ${lastKey(path)}: <${EXPECTED[issue.expected] ?? issue.expected}>`);
        else at(path, `expected ${EXPECTED[issue.expected] ?? issue.expected}, got ${describe(value)}`);
        break;
      case 'invalid_key':
        // A record key that failed its own schema (an env name, a toggle name): its message says why.
        at(path, issue.issues[0]?.message ?? issue.message);
        break;
      case 'too_small':
        // As for too_big: a schema's own message on a bound is the fix.
        at(path, tooSmall(issue, value), issue.message.startsWith('Too small') ? undefined : issue.message);
        break;
      case 'too_big':
        // A schema's own message on a bound says why the bound exists: it is the fix.
        at(path, tooBig(issue, value), issue.message.startsWith('Too big') ? undefined : issue.message);
        break;
      default:
        at(path, issue.message);
    }
  }
  return out;
}

function tooBig(issue: z.core.$ZodIssueTooBig, value: unknown): string {
  const max = String(issue.maximum);
  if (issue.origin === 'array') return `has ${Array.isArray(value) ? value.length : '?'} items, at most ${max} allowed`;
  if (issue.origin === 'string')
    return `is ${typeof value === 'string' ? value.length : '?'} characters long, at most ${max} allowed`;
  return `must be at most ${max} (got ${describe(value)})`;
}

function tooSmall(issue: z.core.$ZodIssueTooSmall, value: unknown): string {
  const min = String(issue.minimum);
  if (issue.origin === 'array') return `needs at least ${min} item(s) (got ${Array.isArray(value) ? value.length : 0})`;
  if (issue.origin === 'string') return 'must not be empty';
  return `must be ${issue.inclusive ? '>=' : '>'} ${min} (got ${describe(value)})`;
}

export function valueAt(data: unknown, path: readonly PathSegment[]): unknown {
  let v: unknown = data;
  for (const seg of path) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<string | number, unknown>)[seg];
  }
  return v;
}

function lastKey(path: readonly PathSegment[]): string {
  const k = path[path.length - 1];
  return k === undefined ? 'value' : String(k);
}

const EXPECTED: Record<string, string> = {
  int: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping',
};

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  // Never the whole of a long string: a message quotes a value, it does not echo a file.
  if (typeof v === 'string')
    return v.length > 60 ? `a string of ${v.length} characters` : `the string ${JSON.stringify(v)}`;
  return String(v);
}
