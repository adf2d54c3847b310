/**
 * Every exit code of `orch`, for the "Exit codes:" section of `orch --help`: built from the
 * error registry's kinds (jobs/error-codes.ts KIND_POLICY) and the verdict codes of submit and
 * report (orchestrator/report/verdict-exit-code.ts), so the help cannot drift from either.
 */
import { KIND_POLICY, type ErrorKind } from '../jobs/error-codes.ts';
import { EXIT_CODES } from '../orchestrator/report/verdict-exit-code.ts';

/** An embedded submit stopped by a signal: the shell's 128 + signal number. */
export const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const satisfies Partial<Record<NodeJS.Signals, number>>;

const KIND_WORDS: Record<ErrorKind, string> = {
  'user-input': 'your input: a bad spec, flag, file or environment (message and hint)',
  transient: 'a transient failure (a lease lost, a card busy)',
  deterministic: 'a deterministic failure (a rank exited, a commit refused)',
  bug: 'a bug in orch (stack printed)',
};

const VERDICT_WORDS: Record<keyof typeof EXIT_CODES, string> = {
  faster: 'submit (waiting) and report: the verdict is faster',
  inconclusive: 'submit and report: inconclusive',
  slower: 'submit and report: slower',
  equivalent: 'submit and report: equivalent within ±min_effect (a sequential experiment decided it)',
  invalid: 'submit and report: invalid (a gate failed, or no verdict possible)',
};

/** [code, meaning] rows in code order; several meanings of one code join into one row. */
export function exitCodeRows(): [number, string][] {
  const rows = new Map<number, string[]>();
  const add = (code: number, what: string) => rows.set(code, [...(rows.get(code) ?? []), what]);
  add(0, 'success');
  for (const [verdict, code] of Object.entries(EXIT_CODES)) add(code, VERDICT_WORDS[verdict as keyof typeof EXIT_CODES]);
  for (const [kind, policy] of Object.entries(KIND_POLICY)) add(policy.exitCode, KIND_WORDS[kind as ErrorKind]);
  add(1, 'submit: the experiment failed or was cancelled');
  for (const [sig, code] of Object.entries(SIGNAL_EXIT_CODES)) add(code, `submit: interrupted by ${sig} (embedded: the experiment is cancelled)`);
  add(SIGNAL_EXIT_CODES.SIGINT, 'submit and watch on a cluster: Ctrl-C (the experiment keeps running unless --cancel-on-interrupt)');
  return [...rows.entries()].sort(([a], [b]) => a - b).map(([code, whats]) => [code, whats.join('; ')]);
}

/** The "Exit codes:" section of `orch --help`. */
export function exitCodesHelp(): string {
  return ['Exit codes:', ...exitCodeRows().flatMap(([code, what]) => wrap(what, 80).map((l, i) => `  ${(i === 0 ? String(code) : '').padEnd(5)}${l}`))].join('\n');
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
