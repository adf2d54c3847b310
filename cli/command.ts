import type { ArgumentsCamelCase, Argv } from 'yargs';

/** Options every command has (declared once in main.ts). */
export interface GlobalOptions {
  /** Print machine-readable JSON on stdout instead of text. */
  json: boolean;
}

/**
 * One `orch <verb>`, one per file in commands/. Its argument type is what its builder declares
 * (yargs infers it from the `positional` and `option` calls), so the handler's `argv` is typed
 * without a cast or a hand-written interface. A handler returns its exit code (nothing: 0) and
 * reports failure by throwing (UserInputError for the user's mistakes); it never calls
 * process.exit nor sets process.exitCode.
 */
export interface OrchCommand<A> {
  command: string;
  describe: string;
  builder: (y: Argv<GlobalOptions>) => Argv<A>;
  handler: (argv: ArgumentsCamelCase<A>) => Promise<number | undefined>;
}

/** The arguments a command's builder declares, for helpers of its handler. */
export type ArgsOf<B extends (y: Argv<GlobalOptions>) => Argv<unknown>> = ArgumentsCamelCase<
  ReturnType<B> extends Argv<infer A> ? A : never
>;

/** A command ready for the parser; its own argument type stays inside, so commands of different shapes share one list. */
export interface RegisteredCommand {
  command: string;
  /** Adds the command to `parser`; `exit` receives its handler's exit code. */
  register(parser: Argv<GlobalOptions>, exit: (code: number) => void): Argv<GlobalOptions>;
}

export function defineCommand<A>(c: OrchCommand<A>): RegisteredCommand {
  return {
    command: c.command,
    register: (parser, exit) =>
      parser.command(c.command, c.describe, c.builder, async (argv) => exit((await c.handler(argv)) ?? 0)),
  };
}
