import type { PathSegment } from './yaml-source.ts';

/** One cross-field problem of a parsed spec: where (a path into the YAML), what, and the fix. */
export interface CompileProblem {
  path: PathSegment[];
  message: string;
  fix?: string;
}
