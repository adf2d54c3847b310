/**
 * `orch completion`: prints yargs' shell completion script (bash; zsh through bashcompinit).
 * Not an OrchCommand: yargs owns both the command that prints the script and the hidden
 * `--get-yargs-completions` the script calls on every <TAB>, which walks the same parser.
 *   orch completion >> ~/.bashrc
 */
import type { Argv } from 'yargs';

export function withCompletion<T>(parser: Argv<T>): Argv<T> {
  return parser.completion('completion', 'print a bash/zsh completion script: orch completion >> ~/.bashrc');
}
