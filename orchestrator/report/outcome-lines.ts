/**
 * What report.md says about the outcome: why an experiment that ended early has no verdict, the
 * exit code its outcome gives under the default --fail-on and how another choice changes it, and
 * the table of every outcome's code (outcome-exit-code.ts). The report is written once, before
 * anyone's --fail-on is known, so it states the default and the rule, not one command's code.
 */

import { isOneOf } from '../../jobs/one-of.ts';
import { escapeRankText } from '../../jobs/rank-text.ts';
import { refusedGrants } from '../stats/refused-grants.ts';
import type { Analysis } from '../stats/types.ts';
import { DEFAULT_FAIL_ON, EXIT_CODES, FAIL_ON_CHOICES, outcomeExitCode } from './outcome-exit-code.ts';

/** The lines under the title of an experiment that ended cancelled or failed (none otherwise). */
export function stoppedLines(a: Pick<Analysis, 'stopped'>): string[] {
  const s = a.stopped;
  if (!s) return [];
  const headline = `**${s.state === 'cancelled' ? 'Cancelled' : 'Failed'} — no verdict: the plan did not run to its end, and partial data decides nothing.** ${escapeRankText(s.reason)}`;
  // a worker that refused every job at its grant check is the cause to read first, with its fix,
  // not the third of several identical block reasons
  const refused = refusedGrants([s]);
  return refused ? [headline, '', `- ${refused}`, ''] : [headline, ''];
}

/** One sentence: this outcome's exit code, and whether --fail-on can change it. */
export function exitCodeLine(a: Pick<Analysis, 'verdict' | 'stopped'>): string {
  const code = outcomeExitCode(a);
  const choice = isOneOf(FAIL_ON_CHOICES, a.verdict);
  if (!choice) return `Exit code ${code} (${a.verdict}).`;
  const fails = code !== 0;
  return `Exit code ${code} (${a.verdict}) with the default --fail-on ${DEFAULT_FAIL_ON.join(',')}; ${fails ? `0 when --fail-on leaves out ${a.verdict}` : `${EXIT_CODES[a.verdict]} with --fail-on ${a.verdict}`}.`;
}

export function exitCodesSection(): string[] {
  return [
    '## Exit codes of `orch submit`, `orch report`, `orch watch` and `orch nightly run`',
    '',
    Object.entries(EXIT_CODES)
      .map(([v, c]) => `${v} ${c}`)
      .join(' · '),
    '',
    `--fail-on chooses which of ${FAIL_ON_CHOICES.join(', ')} exit with their code (default ${DEFAULT_FAIL_ON.join(', ')}); the others exit 0. failed and cancelled always do.`,
    '',
  ];
}
