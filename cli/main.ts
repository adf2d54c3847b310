/**
 * `orch`: the command line. main() is the only place that calls process.exit. The exit codes
 * (cli/exit-codes.ts, printed by `orch --help`): 0 success, 2 for a UserInputError (bad spec,
 * bad flag, unknown command: message and hint, no stack), 1 for other failures and bugs (a
 * bug: stack and cause chain), 3–5 for the verdict of submit and report.
 *
 * This module and each command module import only what parsing needs; a command loads its
 * heavy modules (Redis, queues, ssh, logging, statistics) inside its handler, so `orch --help`
 * and `orch validate` start without them.
 */
import yargs from 'yargs';
import { UserInputError } from '../jobs/errors.ts';
import type { GlobalOptions } from './command.ts';
import { withCompletion } from './commands/completion.ts';
import { commands } from './commands/index.ts';
import { environmentHelp } from './environment.ts';
import { exitCodesHelp } from './exit-codes.ts';
import { exitCodeOf, formatError, jsonError } from './print-error.ts';
import { jsonLine } from './terminal/json-line.ts';

/** The parser of one command line; `exit` receives the exit code of the command that ran. */
export function buildParser(argv: string[], exit: (code: number) => void = () => undefined, version = '') {
  let parser = yargs(argv)
    .scriptName('orch')
    .usage('$0 <command> [options]')
    .option('json', {
      type: 'boolean',
      default: false,
      global: true,
      describe: 'print machine-readable JSON on stdout (an error too: one object)',
    })
    .strict()
    .demandCommand(1, 'name a command')
    .recommendCommands()
    .help()
    .alias('h', 'help')
    .epilogue(`${exitCodesHelp()}\n\n${environmentHelp()}`)
    .version('version', 'show the version and the git commit', version)
    .wrap(100)
    .exitProcess(false)
    .fail((msg, err) => {
      if (err) throw err;
      const message = msg?.startsWith('Did you mean')
        ? `unknown command "${argv[0]}": ${msg}`
        : (msg ?? 'invalid command line');
      throw new UserInputError('CLI_USAGE', message, { hint: 'run orch --help for the commands and their options' });
    });
  parser = withCompletion(parser);
  for (const c of commands) parser = c.register(parser, exit);
  return parser as unknown as { parseAsync(): Promise<GlobalOptions> };
}

/**
 * Whether the command line asks for --json, read from the words themselves: a usage error
 * happens before yargs hands over any options, and it must be JSON too.
 */
export function wantsJson(argv: string[]): boolean {
  let json = false;
  for (const a of argv) {
    if (a === '--') break;
    if (a === '--json' || a === '--json=true') json = true;
    else if (a === '--no-json' || a === '--json=false') json = false;
  }
  return json;
}

/** Runs one command line; returns the exit code instead of exiting (tests call this). */
export async function runCli(argv: string[]): Promise<number> {
  try {
    // A command whose outcome is a code, not an error (orch report's verdict), returns it.
    let code = 0;
    // The version line reads package.json through its schema (zod): only for --version.
    const version = argv.includes('--version') ? (await import('./version.ts')).versionLine() : '';
    await buildParser(argv, (c) => (code = c), version).parseAsync();
    return code;
  } catch (caught) {
    // a full Redis refusing a write, wherever a command met it: REDIS_OOM, not a bug's stack
    const err = /^OOM\b/.test((caught as Error | null)?.message ?? '')
      ? (await import('../store/redis-oom.ts')).asRedisOom(caught)
      : caught;
    if (wantsJson(argv)) {
      process.stdout.write(jsonLine(jsonError(err)));
      // the stack of a bug stays readable for whoever reports it, off stdout
      if (jsonError(err).error.kind === 'bug') process.stderr.write(formatError(err));
    } else {
      process.stderr.write(formatError(err));
    }
    return exitCodeOf(err);
  }
}

export async function main(argv: string[]): Promise<never> {
  const code = await runCli(argv);
  process.exit(code);
}
