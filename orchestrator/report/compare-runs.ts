/**
 * `orch compare A B C …`: several finished runs of one workload, each compared with the first
 * (the baseline) as `orch compare A B` compares two (compare-results.ts: refused unless the
 * workload is the same; each arm unpaired, Welch's t on the log of block means). Across N − 1 comparisons
 * of every shared arm, some come out "significant" by chance alone: which survive is decided by
 * Benjamini–Hochberg at alpha over all of them (stats/false-discovery.ts), as a nightly suite does
 * for its many comparisons.
 */
import { benjaminiHochberg } from '../stats/false-discovery.ts';
import { signedPct } from '../stats/format-number.ts';
import { type CompareResult, compareResults } from './compare-results.ts';
import { markdownTable } from './markdown-table.ts';

export interface RunsComparison {
  baseline: string;
  /** each later run against the baseline, in the order given */
  comparisons: CompareResult[];
  /** per comparison and arm (same order as comparisons[i].arms): whether it survives BH at alpha */
  discoveries: boolean[][];
  text: string;
}

export function compareRuns(dirs: readonly string[], alpha = 0.05): RunsComparison {
  const [baseline, ...others] = dirs;
  const comparisons = others.map((d) => compareResults(baseline!, d, alpha));
  const flat = comparisons.flatMap((c) => c.arms.map((a) => a.welch.p));
  const found = benjaminiHochberg(flat, alpha);
  let at = 0;
  const discoveries = comparisons.map((c) => c.arms.map(() => found[at++]!));
  const arms = [...new Set(comparisons.flatMap((c) => c.arms.map((a) => a.arm)))];
  const cell = (i: number, arm: string): string => {
    const j = comparisons[i]!.arms.findIndex((a) => a.arm === arm);
    if (j < 0) return '—';
    const a = comparisons[i]!.arms[j]!;
    return `${signedPct(a.relative.estimate)} (${signedPct(a.relative.ci?.[0])} to ${signedPct(a.relative.ci?.[1])})${discoveries[i]![j] ? ' **changed**' : ''}`;
  };
  const level = `${Math.round((1 - alpha) * 100)} %`;
  const text = [
    `# compare ${comparisons.length + 1} runs with ${baseline}`,
    '',
    `Each run against the baseline ${baseline}, per arm: B/A − 1 unpaired (Welch's t on the log of block means), with its ${level} CI; **changed**: its p survives Benjamini–Hochberg at ${alpha} over all ${flat.length} arm comparisons.`,
    '',
    markdownTable(
      ['run', ...arms],
      comparisons.map((c, i) => [c.b, ...arms.map((arm) => cell(i, arm))]),
    ),
    ...comparisons.map((c) => `\n${c.text}`),
  ].join('\n');
  return { baseline: baseline!, comparisons, discoveries, text: `${text.trimEnd()}\n` };
}
