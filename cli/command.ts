import type { ArgumentsCamelCase, Argv } from 'yargs';

/** Options every command has (declared once in main.ts). */
export interface GlobalOptions {
  /** Print machine-readable JSON on stdout instead of text. */
  json: boolean;
}

/**
 * One `orch <verb>`: a yargs command module, one per file in commands/. A handler reports
 * failure by throwing (UserInputError for the user's mistakes); it never calls process.exit.
 */
export interface OrchCommand<A = object> {
  command: string;
  describe: string;
  builder: (y: Argv<GlobalOptions>) => Argv<GlobalOptions & A>;
  handler: (argv: ArgumentsCamelCase<GlobalOptions & A>) => void | Promise<void>;
}

/** Erases a command's own argument type so commands of different shapes share one list. */
export function defineCommand<A>(c: OrchCommand<A>): OrchCommand {
  return c as unknown as OrchCommand;
}
