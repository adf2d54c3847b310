/**
 * `orch report --format github`: the CI cases of one experiment (ci-cases.ts) as GitHub Actions
 * workflow commands — `::error` for a case --fail-on makes a failure or an experiment that ended
 * early, `::warning` for a case it lets pass that still deserves a look (ci-cases.ts `notable`),
 * `::notice` for the rest — and a markdown step summary (the command appends it to
 * $GITHUB_STEP_SUMMARY when that is set). A workflow command's data escapes %, CR and LF; its
 * properties also : and ,.
 */
import type { Analysis } from '../stats/types.ts';
import { type CiCase, ciCases } from './ci-cases.ts';
import { markdownTable } from './markdown-table.ts';
import type { FailOnSet } from './outcome-exit-code.ts';

const escapeData = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const escapeProperty = (s: string) => escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');

const level = (c: CiCase) =>
  c.status === 'failed' || c.status === 'error' ? 'error' : c.notable ? 'warning' : 'notice';

/** The workflow commands, one line per case. */
export function githubAnnotations(a: Analysis, failOn: FailOnSet): string {
  return ciCases(a, failOn)
    .map(
      (c) =>
        `::${level(c)} title=${escapeProperty(`orch ${a.experiment}: ${c.name}`)}::${escapeData(c.detail ? `${c.message}\n${c.detail}` : c.message)}\n`,
    )
    .join('');
}

const MARK: Record<CiCase['status'], string> = {
  passed: '✅ passed',
  failed: '❌ failed',
  skipped: '⏭️ skipped',
  error: '⛔ error',
};

/** The step summary: the outcome, then every case in a table. */
export function githubSummary(a: Analysis, failOn: FailOnSet): string {
  const cases = ciCases(a, failOn);
  const outcome = cases.find((c) => c.group === 'outcome')!;
  return [
    `### orch ${a.experiment}: ${a.verdict.toUpperCase()}`,
    '',
    `${MARK[outcome.status]} — ${outcome.message} (--fail-on ${[...failOn].join(',') || 'none'})`,
    '',
    markdownTable(
      ['case', 'result', 'found'],
      cases.filter((c) => c.group !== 'outcome').map((c) => [c.name, MARK[c.status], c.message]),
    ),
    '',
  ].join('\n');
}
