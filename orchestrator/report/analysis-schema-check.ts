/**
 * The hand-written Analysis (types.ts), which analyzeExperiment builds, and report.json's zod
 * definition (analysis-schema.ts), which its readers parse with, checked against each other by
 * the compiler: every Analysis the code can build is a document the schema accepts, and every
 * document the schema accepts is an Analysis the renderers can read. A field added to one and not
 * the other fails `npm run typecheck` here. Nothing runs: the file holds types only.
 */
import type { z } from 'zod';
import type { AnalysisSchema } from '../stats/analysis-schema.ts';
import type { Analysis } from '../stats/types.ts';
import type { Provenance } from './provenance.ts';

type Holds<T extends true> = T;
type Fits<A, B> = [A] extends [B] ? true : false;
/** The schema's document with every array read-only: the Analysis keeps some (a trace's graphs) that way. */
/** The fields of A (at any depth) that B does not have: assignability alone lets an extra optional field through. */
type KeysNotIn<A, B> = A extends readonly (infer E)[]
  ? [B] extends [readonly (infer F)[]]
    ? KeysNotIn<E, F>
    : never
  : A extends object
    ? [B] extends [object]
      ? { [K in keyof A]-?: K extends AnyKey<B> ? KeysNotIn<NonNullable<A[K]>, NonNullable<PropOf<B, K>>> : K }[keyof A]
      : never
    : never;
/** Over a union (a trace floor's two sources): the keys of any member, and that key's value in the members that have it. */
type AnyKey<B> = B extends unknown ? keyof B : never;
type PropOf<B, K extends PropertyKey> = B extends unknown ? (K extends keyof B ? B[K] : never) : never;
type Frozen<T> = T extends readonly unknown[] | object ? { readonly [K in keyof T]: Frozen<T[K]> } : T;

/** What the results writer writes: the analysis with its provenance (orchestrator/results/write-results.ts). */
type Written = Analysis & { provenance: Provenance };
type Parsed = z.output<typeof AnalysisSchema>;

export type AnalysisFitsSchema = Holds<Fits<Written, Frozen<z.input<typeof AnalysisSchema>>>>;
export type NoFieldOutsideSchema = Holds<Fits<KeysNotIn<Written, Parsed>, never>>;
export type NoFieldOutsideAnalysis = Holds<
  Fits<KeysNotIn<Omit<Parsed, 'provenance' | 'version' | 'exit_code'>, Analysis>, never>
>;
export type SchemaFitsAnalysis = Holds<Fits<Omit<Parsed, 'provenance' | 'version' | 'exit_code'>, Analysis>>;
