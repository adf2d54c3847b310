/**
 * Pairs inside blocks: an arm's k-th rep of a block with the reference's k-th rep of the same
 * block. A balanced order (ABBA, Williams) puts those two next to each other or close, so the
 * pair shares the box state of the block and of the moment; the difference inside a pair is the
 * unit of every comparison. Pairs across blocks would carry the block-to-block variance (the
 * 15 % session drift of an eager baseline) that the interleaving exists to remove.
 */
import { repKey } from '../../jobs/rep-ref.ts';
import type { PlanLike, RepValue } from './types.ts';

export interface Pair {
  block: number;
  k: number;
  x: number;
  y: number;
}

export interface Pairing {
  pairs: Pair[];
  unpaired: string[];
}

export function valueIndex(values: readonly RepValue[]): Map<string, RepValue> {
  return new Map(values.map((v) => [repKey(v), v]));
}

/** How many reps of `arm` a block's sequence holds. */
export function occurrences(sequence: readonly string[], arm: string): number {
  return sequence.filter((a) => a === arm).length;
}

export function pairArms(plan: PlanLike, index: Map<string, RepValue>, arm: string, reference: string): Pairing {
  const pairs: Pair[] = [];
  const unpaired: string[] = [];
  for (const b of plan.blocks) {
    const n = Math.max(occurrences(b.sequence, arm), occurrences(b.sequence, reference));
    for (let k = 0; k < n; k++) {
      const x = index.get(repKey({ block: b.index, arm, rep: k }));
      const y = index.get(repKey({ block: b.index, arm: reference, rep: k }));
      if (x && y) pairs.push({ block: b.index, k, x: x.value, y: y.value });
      else {
        const gone = [x ? null : arm, y ? null : reference].filter((a) => a !== null).join(' and ');
        unpaired.push(`block ${b.index} pair ${k}: no usable rep of ${gone}`);
      }
    }
  }
  return { pairs, unpaired };
}

/** At most this many unpaired pairs are named in a comparison's reasons; the rest are counted. */
const NAMED_UNPAIRED = 3;

/**
 * The unpaired pairs as a comparison's reasons: a few by name, then a count — a cancel or a
 * failed block leaves dozens, whose reps the input section already accounts for.
 */
export function unpairedReasons(unpaired: readonly string[]): string[] {
  if (unpaired.length <= NAMED_UNPAIRED) return [...unpaired];
  return [
    ...unpaired.slice(0, NAMED_UNPAIRED - 1),
    `and ${unpaired.length - (NAMED_UNPAIRED - 1)} more pairs without a usable rep (see Input)`,
  ];
}
