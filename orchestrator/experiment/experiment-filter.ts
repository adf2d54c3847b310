/**
 * The filters every experiment list takes (the dashboard's /experiments query string, `orch
 * status` flags): a state, an outcome (experiment-outcome.ts: a verdict, cancelled, failed,
 * no-reps) and a substring of the name or id. Values outside the fixed sets are refused by the
 * caller with its own wording (a page shows it, the CLI exits 2).
 */
import type { Redis } from 'ioredis';
import {
  EXPERIMENT_STATES,
  type ExperimentRecord,
  type ExperimentState,
  ExperimentStore,
  TERMINAL_EXPERIMENT_STATES,
} from '../../store/experiment-store.ts';
import { type ExperimentOutcome, experimentOutcomes } from './experiment-outcome.ts';
import { OUTCOMES, type Outcome } from './outcome-codes.ts';

export interface ExperimentFilter {
  state?: ExperimentState;
  outcome?: Outcome;
  /** a substring of the name or the id */
  name?: string;
}

/** The problem with `value` as `what`, or null when it is one of `allowed` (or empty: no filter). */
export function filterProblem(what: 'state' | 'verdict', value: string | undefined): string | null {
  const allowed: readonly string[] = what === 'state' ? EXPERIMENT_STATES : OUTCOMES;
  if (!value || allowed.includes(value)) return null;
  return `${what} "${value}" is not one of ${allowed.join(', ')}`;
}

export function matchesName(f: ExperimentFilter, exp: { id: string; name: string }): boolean {
  return !f.name || exp.name.includes(f.name) || exp.id.includes(f.name);
}

/** An outcome filter matches only ended experiments with that outcome. */
export function matchesOutcome(f: ExperimentFilter, outcome: ExperimentOutcome | null): boolean {
  return !f.outcome || outcome?.outcome === f.outcome;
}

/** Records read at a time while a filter looks for matches. */
const READ_BATCH = 200;

export interface Selection {
  /** matches passed over first (earlier pages) */
  skip?: number;
  limit: number;
  /** a further test the caller has (the dashboard's spec hash and host) */
  also?: (exp: ExperimentRecord) => boolean | Promise<boolean>;
  /** count every match (`orch status`: "N more not shown"); else stop at the first past the page */
  countAll?: boolean;
}

/**
 * The matches of `f` (its name and outcome: the state is the caller's, who has every state at
 * hand) in `ids`' order, after `skip`, at most `limit`; how many match (every one only with
 * countAll) and whether more follow. Without a name, outcome or further test only the page's
 * records are read; with one, records are read a batch at a time until the page is full.
 */
export async function selectExperiments(
  redis: Redis,
  prefix: string,
  ids: readonly string[],
  f: ExperimentFilter,
  sel: Selection,
): Promise<{ exps: ExperimentRecord[]; matched: number; more: boolean }> {
  const store = new ExperimentStore(redis, prefix);
  const skip = sel.skip ?? 0;
  const read = async (some: readonly string[]) =>
    (await Promise.all(some.map((id) => store.get(id)))).filter((e): e is ExperimentRecord => e !== null);
  if (!f.name && !f.outcome && !sel.also)
    return {
      exps: await read(ids.slice(skip, skip + sel.limit)),
      matched: ids.length,
      more: ids.length > skip + sel.limit,
    };
  const exps: ExperimentRecord[] = [];
  let matched = 0;
  for (let i = 0; i < ids.length && (sel.countAll || matched <= skip + sel.limit); i += READ_BATCH) {
    const named = (await read(ids.slice(i, i + READ_BATCH))).filter(
      (e) => matchesName(f, e) && (!f.outcome || TERMINAL_EXPERIMENT_STATES.has(e.state)),
    );
    const outcomes = f.outcome ? await experimentOutcomes(redis, prefix, named) : named.map(() => null);
    for (const [j, exp] of named.entries()) {
      if (!matchesOutcome(f, outcomes[j]!) || (sel.also && !(await sel.also(exp)))) continue;
      if (matched >= skip && exps.length < sel.limit) exps.push(exp);
      matched++;
      if (!sel.countAll && matched > skip + sel.limit) break;
    }
  }
  return { exps, matched, more: matched > skip + exps.length };
}
