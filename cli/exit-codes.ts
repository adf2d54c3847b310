/**
 * Every exit code of `orch`, for the "Exit codes:" section of `orch --help`: built from the
 * error registry's kinds (jobs/error-codes.ts KIND_POLICY) and the outcome codes of submit, report,
 * watch and nightly run (orchestrator/report/outcome-exit-code.ts), so the help cannot drift from either.
 */
import { type ErrorKind, KIND_POLICY } from '../jobs/error-codes.ts';
import { isOneOf } from '../jobs/one-of.ts';
import { DEFAULT_FAIL_ON, EXIT_CODES, FAIL_ON_CHOICES } from '../orchestrator/report/outcome-exit-code.ts';
import type { Outcome } from '../orchestrator/stats/types.ts';

/** An embedded submit stopped by a signal: the shell's 128 + signal number. */
export const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const satisfies Partial<
  Record<NodeJS.Signals, number>
>;

const KIND_WORDS: Record<ErrorKind, string> = {
  'user-input': 'your input: a bad spec, flag, file or environment (message and hint)',
  transient: 'a transient failure (a lease lost, a card busy)',
  deterministic: 'a deterministic failure (a rank exited, a commit refused)',
  bug: 'a bug in orch (stack printed)',
};

const OUTCOME_WORDS: Record<Outcome, string> = {
  faster: 'faster',
  pass: "pass (a capture probe's self-checks held)",
  inconclusive: 'inconclusive',
  slower: 'slower',
  invalid: 'invalid (a gate failed, or no verdict possible)',
  equivalent: 'equivalent within ±min_effect (a sequential experiment decided it)',
  fail: "fail (a capture probe's self-checks did not all hold)",
  failed: 'failed: the experiment failed (2 when it failed on your input, e.g. a build)',
  cancelled: 'cancelled: partial data, no verdict',
  not_testable:
    "not_testable: a graph arm's capture failed in your program (the report's Capture blockers); the other arms were measured",
};

/** What a row says of an outcome: its words, and whether --fail-on decides it. */
function outcomeWords(outcome: Outcome): string {
  const choice = isOneOf(FAIL_ON_CHOICES, outcome);
  const dflt = isOneOf(DEFAULT_FAIL_ON, outcome);
  return `outcome ${OUTCOME_WORDS[outcome]}${choice ? ` (if --fail-on has it${dflt ? ', as by default' : '; by default 0'})` : ''}`;
}

/** [code, meaning] rows in code order; several meanings of one code join into one row. */
export function exitCodeRows(): [number, string][] {
  const rows = new Map<number, string[]>();
  const add = (code: number, what: string) => rows.set(code, [...(rows.get(code) ?? []), what]);
  add(0, 'success');
  for (const [outcome, code] of Object.entries(EXIT_CODES)) add(code, outcomeWords(outcome as Outcome));
  for (const [kind, policy] of Object.entries(KIND_POLICY)) add(policy.exitCode, KIND_WORDS[kind as ErrorKind]);
  for (const [sig, code] of Object.entries(SIGNAL_EXIT_CODES))
    add(code, `submit: interrupted by ${sig} (embedded: the experiment is cancelled)`);
  add(
    SIGNAL_EXIT_CODES.SIGINT,
    'submit and watch on a cluster: Ctrl-C (the experiment keeps running unless --cancel-on-interrupt)',
  );
  return [...rows.entries()].sort(([a], [b]) => a - b).map(([code, whats]) => [code, whats.join('; ')]);
}

/** The "Exit codes:" section of `orch --help`. */
export function exitCodesHelp(): string {
  const intro = `An outcome's code is the same from submit, report, watch and nightly run; --fail-on picks which of ${FAIL_ON_CHOICES.join(', ')} exit with their code (default ${DEFAULT_FAIL_ON.join(', ')}), the others exit 0.`;
  return [
    'Exit codes:',
    ...wrap(intro, 85).map((l) => `  ${l}`),
    ...exitCodeRows().flatMap(([code, what]) =>
      wrap(what, 80).map((l, i) => `  ${(i === 0 ? String(code) : '').padEnd(5)}${l}`),
    ),
  ].join('\n');
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  return [...lines, line];
}
