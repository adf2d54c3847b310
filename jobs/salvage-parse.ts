/**
 * After a schema refused a config, what the later stages can still check: the data with every
 * value an issue points at taken out (an unknown key, a value of the wrong type or range), parsed
 * again, a few rounds. Where that parses, the compile stage runs on it, so one `orch validate`
 * reports a misspelt key and a misspelt toggle together instead of one per run. A value taken out
 * falls back to its default; no problem is reported at a path that was taken out (the schema's
 * issue there is the one to fix). A default standing in for a misspelt key may draw a problem of
 * its own (`loks: 2` taken out, the default 5 looks against 4 blocks): both are then listed, the
 * misspelling first on its line. Never through a list: taking an item out would renumber the
 * items after it, and their problems would name the wrong index.
 */
import type { z } from 'zod';
import type { PathSegment } from './yaml-source.ts';

const ROUNDS = 4;

export interface Salvaged<T> {
  data: T;
  /** the paths taken out */
  cut: PathSegment[][];
}

export function salvageParse<S extends z.ZodType>(
  schema: S,
  data: unknown,
  error: z.ZodError,
): Salvaged<z.infer<S>> | null {
  if (typeof data !== 'object' || data === null) return null;
  const copy: unknown = structuredClone(data);
  const cut: PathSegment[][] = [];
  let issues = error.issues;
  for (let round = 0; round < ROUNDS; round++) {
    for (const issue of issues) {
      const path = issue.path.filter((p): p is PathSegment => typeof p !== 'symbol');
      const targets = issue.code === 'unrecognized_keys' ? issue.keys.map((k) => [...path, k]) : [path];
      for (const target of targets) {
        // A required key already gone (taken out last round): its mapping goes, when that is optional.
        const at = takeOut(copy, target)
          ? target
          : target.length > 1 && takeOut(copy, target.slice(0, -1))
            ? target.slice(0, -1)
            : null;
        if (at === null) return null;
        cut.push(at);
      }
    }
    const again = schema.safeParse(copy);
    if (again.success) return { data: again.data, cut };
    issues = again.error.issues;
  }
  return null;
}

/** Whether a problem at `path` is about something taken out (at it, above it or below it). */
export function overlapsCut(path: readonly PathSegment[], cut: readonly PathSegment[][]): boolean {
  return cut.some((c) => {
    const n = Math.min(c.length, path.length);
    for (let i = 0; i < n; i++) if (String(c[i]) !== String(path[i])) return false;
    return true;
  });
}

/** Deletes the key at `path` from a mapping; false when there is nothing to take out or a list is on the way. */
function takeOut(data: unknown, path: readonly PathSegment[]): boolean {
  if (path.length === 0) return false;
  let v: unknown = data;
  for (const seg of path.slice(0, -1)) {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
    v = (v as Record<string, unknown>)[String(seg)];
  }
  const last = String(path[path.length - 1]);
  if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.hasOwn(v, last)) return false;
  delete (v as Record<string, unknown>)[last];
  return true;
}
