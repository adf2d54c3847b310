import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileSpec } from '../../jobs/compile-spec.ts';
import { GRAPHRT_TOGGLES } from '../../jobs/graphrt-toggles.ts';
import { mulberry32 } from '../../jobs/seeded-random.ts';
import { type Spec, SpecSchema } from '../../jobs/spec.ts';
import { canonicalJson, specHash } from '../../jobs/spec-hash.ts';
import { generateSpecs, loadRaw, type Random } from '../planner/spec-generator.ts';

const SPECS = generateSpecs(7, 150);

function shuffleKeys(value: unknown, random: Random): unknown {
  if (Array.isArray(value)) return value.map((v) => shuffleKeys(v, random));
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).map(([k, v]) => [k, shuffleKeys(v, random)] as const);
    entries.sort(() => random() - 0.5);
    return Object.fromEntries(entries);
  }
  return value;
}

type Path = (string | number)[];

function leaves(value: unknown, path: Path = []): Path[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, [...path, i]));
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]));
  return [path];
}

function setAt(root: unknown, path: Path, v: unknown): unknown {
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let node = copy;
  for (const seg of path.slice(0, -1)) node = node[seg] as Record<string | number, unknown>;
  node[path[path.length - 1] as string | number] = v;
  return copy;
}

const STRING_ALTERNATIVES = [
  'balanced',
  'random',
  'layers',
  'max_pos',
  'cpu',
  'cuda',
  'auto',
  'higher',
  'lower',
  'mean',
  'median',
  'spread',
  'host',
  'wait',
  'fail',
  'chain',
  ...GRAPHRT_TOGGLES,
  'GRAPH',
  'PDL',
  'OVERLAP',
  'SPLIT',
  'PIN',
];

function alternatives(v: unknown): unknown[] {
  if (typeof v === 'boolean') return [!v, { replays: 3 }]; // gates.identity: false → on
  if (typeof v === 'number') return Number.isInteger(v) ? [v + 1, v - 1] : [v * 2];
  if (typeof v === 'string') return [...STRING_ALTERNATIVES.filter((s) => s !== v), `${v}x`, `${v}-2`];
  return [];
}

/** The validation pipeline without the YAML text (parse, compile), for speed. */
function validateObject(raw: unknown): Spec | undefined {
  const parsed = SpecSchema.safeParse(raw);
  if (!parsed.success) return undefined;
  const { spec, problems } = compileSpec(parsed.data);
  return problems.length === 0 ? spec : undefined;
}

/** `arms.[].toggles.*`: the leaf's place in the schema (indices and toggle names folded). */
const pattern = (path: Path): string =>
  path
    .map((p, i) => (typeof p === 'number' ? '[]' : path[i - 1] === 'toggles' && path[0] === 'arms' ? '*' : p))
    .join('.');

/**
 * Mutates each leaf of each validated spec in turn to the first other value that still
 * validates; returns the mutations `hash` did not notice, and the leaf patterns (`arms.[].name`)
 * no spec could mutate on its own (changing them needs another field to change too).
 */
function unnoticedMutations(hash: (spec: Spec) => string): { missed: string[]; immutable: string[] } {
  const missed: string[] = [];
  const seen = new Set<string>();
  const mutated = new Set<string>();
  for (const { loaded } of SPECS.slice(0, 60)) {
    const before = hash(loaded.spec);
    for (const path of leaves(loaded.spec)) {
      seen.add(pattern(path));
      const value = path.reduce<unknown>((n, s) => (n as Record<string | number, unknown>)[s], loaded.spec);
      for (const alt of alternatives(value)) {
        const spec = validateObject(setAt(loaded.spec, path, alt));
        if (spec === undefined) continue;
        mutated.add(pattern(path));
        if (hash(spec) === before) missed.push(`${loaded.spec.name} ${path.join('.')} → ${JSON.stringify(alt)}`);
        break;
      }
    }
  }
  return { missed, immutable: [...seen].filter((p) => !mutated.has(p)).sort() };
}

describe('spec hash', () => {
  it('is 64 hex digits of sha256 over the canonical JSON', () => {
    for (const { loaded } of SPECS) assert.match(loaded.hash, /^[0-9a-f]{64}$/);
    assert.equal(canonicalJson({ b: [2, { d: 1, c: undefined, a: 0 }], a: 1 }), '{"a":1,"b":[2,{"a":0,"d":1}]}');
  });

  it('is stable under key reordering', () => {
    const random = mulberry32(99);
    for (const { raw, loaded } of SPECS) assert.equal(loadRaw(shuffleKeys(raw, random)).hash, loaded.hash);
  });

  it('is stable under YAML reformatting (flow/block style, quoting, indentation)', () => {
    for (const { raw, loaded } of SPECS) {
      assert.equal(loadRaw(raw, { collectionStyle: 'flow' }).hash, loaded.hash);
      assert.equal(
        loadRaw(raw, { defaultStringType: 'QUOTE_DOUBLE', defaultKeyType: 'PLAIN', indent: 4 }).hash,
        loaded.hash,
      );
    }
  });

  it('is stable when every default is spelled out', () => {
    for (const { loaded } of SPECS) assert.equal(loadRaw(loaded.spec).hash, loaded.hash);
    const short = {
      name: 'x',
      design: 'ab',
      workload: { runtime: 'native', kind: 'chain' },
      toggles: ['graph', 'pdl'],
      arms: [{ name: 'a' }, { name: 'b', toggles: { graph: true } }],
    };
    const long = {
      ...short,
      kind: 'experiment',
      reps: 5,
      order: 'balanced',
      arms: [
        { name: 'a', toggles: { graph: false, pdl: false } },
        { name: 'b', toggles: { graph: true, pdl: false } },
      ],
      gates: { identity: { replays: 7 }, aa: false },
    };
    assert.equal(loadRaw(long).hash, loadRaw(short).hash);
  });

  it('changes when any value changes (each leaf mutated in turn)', () => {
    const { missed, immutable } = unnoticedMutations((s) => specHash(s));
    assert.deepEqual(missed, []);
    // A discriminator or a regex group name cannot change alone and stay valid.
    assert.deepEqual(immutable, [
      'design',
      'kind',
      'workload.kind',
      'workload.metric_source.format',
      'workload.metric_source.step_group',
      'workload.metric_source.value_group',
      'workload.runtime',
    ]);
  });

  it('changes when the toggle order changes (it orders the arms)', () => {
    const a = loadRaw({
      name: 'x',
      design: 'leave-one-out',
      workload: { runtime: 'native', kind: 'chain' },
      toggles: ['graph', 'pdl'],
    });
    const b = loadRaw({
      name: 'x',
      design: 'leave-one-out',
      workload: { runtime: 'native', kind: 'chain' },
      toggles: ['pdl', 'graph'],
    });
    assert.notEqual(a.hash, b.hash);
  });

  it('covers across_runs: allowing a Slurm node change is registered with the spec, absent keeps the hash specs had before it', () => {
    const short = {
      name: 'x',
      design: 'leave-one-out',
      workload: { runtime: 'native', kind: 'chain' },
      toggles: ['graph', 'pdl'],
    };
    const allowing = loadRaw({ ...short, across_runs: { allow_node_change: true } });
    assert.equal(allowing.spec.across_runs?.allow_node_change, true);
    assert.notEqual(allowing.hash, loadRaw(short).hash);
    assert.equal(loadRaw(short).spec.across_runs, undefined);
  });

  it('a hash that ignores a field is caught (planted bug)', () => {
    const ignoresPlacement = (s: Spec): string => specHash({ ...s, blocks: { ...s.blocks, placement: 'host' } });
    const ignoresSeed = (s: Spec): string => specHash({ ...s, seed: undefined });
    assert.ok(unnoticedMutations(ignoresPlacement).missed.some((m) => m.includes('blocks.placement')));
    assert.ok(unnoticedMutations(ignoresSeed).missed.some((m) => m.includes(' seed ')));
  });
});
