/**
 * A seeded generator of valid raw specs (what a user would write, defaults mostly left out),
 * for the property tests of the planner and the hash. Same seed, same specs.
 */
import { stringify, type ToStringOptions } from 'yaml';
import { GRAPHRT_TOGGLES } from '../../jobs/graphrt-toggles.ts';
import { mulberry32, shuffled } from '../../jobs/seeded-random.ts';
import { type LoadedSpec, parseConfigText } from '../../orchestrator/spec/load-spec.ts';

export type Random = () => number;

export const int = (random: Random, lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const chance = (random: Random, p: number): boolean => random() < p;

const DESIGNS = ['ab', 'leave-one-out', 'sweep', 'probe'] as const;

export function generateRawSpec(random: Random, index: number): Record<string, unknown> {
  const design = pick(random, DESIGNS);
  const command = design !== 'probe' && chance(random, 0.35);
  const toggleNames = command ? ['GRAPH', 'PDL', 'OVERLAP', 'SPLIT', 'PIN'] : [...GRAPHRT_TOGGLES];
  const k = design === 'leave-one-out' ? int(random, 2, 5) : int(random, 1, 4);
  const toggles = shuffled(toggleNames, random).slice(0, k);
  const spec: Record<string, unknown> = { name: `gen-${index}`, design };
  const workload: Record<string, unknown> = command
    ? {
        runtime: 'command',
        run: { cmd: './bench --steps 40', timeout_s: int(random, 10, 900) },
        toggles: Object.fromEntries(toggleNames.map((t) => [t, { env: `K_${t}`, on: '1', off: '0' }])),
        metric_source: chance(random, 0.5)
          ? { format: 'jsonl', field: 'ms', step_field: 'step' }
          : { format: 'regex', pattern: 'step (?<step>\\d+): (?<value>[0-9.]+) ms', step_group: 'step' },
      }
    : design === 'probe'
      ? { runtime: 'native', kind: 'probe' }
      : {
          runtime: 'native',
          kind: 'decode',
          params: { layers: int(random, 1, 16), hidden: pick(random, [128, 256, 512]) },
        };
  if (chance(random, 0.5)) workload.warmup = int(random, 0, 8);
  if (chance(random, 0.5)) workload.steps = int(random, 1, 64);
  if (design === 'probe' && command) workload.probe = { cmd: './probe' };
  spec.workload = workload;
  spec.toggles = toggles;
  if (design === 'ab') {
    const [first, ...rest] = toggles as [string, ...string[]];
    spec.arms = [
      { name: 'A', toggles: Object.fromEntries(rest.map((t) => [t, chance(random, 0.5)])) },
      { name: 'B', toggles: { [first]: true } },
    ];
  }
  if (design === 'sweep') {
    const values = shuffled([32, 64, 128, 256, 512, 1024], random).slice(0, int(random, 2, 5));
    if (command) {
      const swept = toggleNames.find((t) => !toggles.includes(t)) as string;
      spec.sweep = { toggle: swept, values: values.map(String) };
    } else {
      spec.sweep = { param: 'hidden', values };
    }
  }
  // Reps: often a multiple of the Williams design's row count, so balance is exercised.
  spec.reps = chance(random, 0.5) ? int(random, 2, 9) : int(random, 1, 3) * pick(random, [2, 4, 6, 8, 10, 12, 14]);
  spec.blocks = { count: int(random, 1, 4), ranks: int(random, 1, 8), placement: pick(random, ['host', 'spread']) };
  spec.gates = {
    aa: chance(random, 0.5),
    identity: command || chance(random, 0.3) ? false : { replays: int(random, 3, 9) },
  };
  if (chance(random, 0.3)) {
    spec.order = 'random';
    spec.seed = int(random, 0, 2 ** 31);
  }
  if (chance(random, 0.3))
    spec.metric = { name: 'ms', better: pick(random, ['lower', 'higher']), min_effect: pick(random, [0.005, 0.02]) };
  return spec;
}

/** A validated spec (the real YAML pipeline) from a raw object. */
export function loadRaw(raw: unknown, yamlOptions: ToStringOptions = {}): LoadedSpec {
  const loaded = parseConfigText('generated.yaml', stringify(raw, null, yamlOptions));
  if (loaded.kind !== 'experiment') throw new Error('generated a non-experiment');
  return loaded;
}

/** `count` generated specs, validated. */
export function generateSpecs(seed: number, count: number): { raw: Record<string, unknown>; loaded: LoadedSpec }[] {
  const random = mulberry32(seed);
  return Array.from({ length: count }, (_, i) => {
    const raw = generateRawSpec(random, i);
    return { raw, loaded: loadRaw(raw) };
  });
}
