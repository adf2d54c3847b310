/**
 * Where one rank of a committed block attempt ran, from its hello: committed with its block in the
 * commit record (jobs/commit-record.ts `ranks`), so the report's provenance (hosts, cards, devices,
 * graphrt versions) reads the committed record, never the event stream's copy of the hello, which
 * the stream may drop (its output budget) or lose (a trimmed or deleted stream).
 */
import { z } from 'zod';
import type { RankHelloLine } from './rank-line.ts';

const count = z.int().min(0);

export const RankOriginSchema = z.strictObject({
  rank: count.meta({ unit: 'index' }),
  host: z.string(),
  card: z.string(),
  /** `cpu`, `cuda` or `command` */
  backend: z.string(),
  /** graphrt's device name, SM and driver; null for a user's program (its worker's hello does not say) */
  device: z.string().nullable(),
  sm: z.string().nullable(),
  driver: z.string().nullable(),
  /** every graphrt version the rank ran (one per build when its arms run several); empty for a user's program */
  graphrt: z.array(z.string()),
  /** a resident program's own hello: where it ran, through what, on which clock; null without one */
  program: z.string().nullable(),
});
export type RankOrigin = z.infer<typeof RankOriginSchema>;

/** A rank's origin from its hello lines (one per process: a rank of several builds runs one each; the first speaks for the card). */
export function rankOrigin(
  where: { rank: number; host: string; card: string },
  hellos: readonly RankHelloLine[],
): RankOrigin {
  const [first] = hellos;
  if (first === undefined) throw new Error(`rank ${where.rank} on card ${where.card} has no hello to record`);
  const [graphrt, program] = first.backend === 'command' ? [null, first.program] : [first, undefined];
  return {
    ...where,
    backend: first.backend,
    device: graphrt?.device ?? null,
    sm: graphrt?.sm ?? null,
    driver: graphrt?.driver ?? null,
    graphrt: [...new Set(hellos.flatMap((h) => ('version' in h ? [h.version] : [])))],
    program:
      program === undefined
        ? null
        : `${program.device} (${program.name} through ${program.library}, ${program.backend}, timed by ${program.timing})`,
  };
}

/** The device a rank's origin names for the analysis: graphrt's, or a resident program's own; null when neither said. */
export function deviceOf(o: RankOrigin): string | null {
  return o.backend === 'command' ? o.program : o.device;
}
