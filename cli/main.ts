/**
 * `orch`: the command line. main() is the only place that calls process.exit: 0 on success,
 * 2 for a UserInputError (bad spec, bad flag, unknown command: message and hint, no stack),
 * 1 for anything else (a bug: stack and cause chain).
 */
import yargs from 'yargs';
import { UserInputError } from '../jobs/errors.ts';
import type { GlobalOptions } from './command.ts';
import { commands } from './commands/index.ts';
import { exitCodeOf, formatError } from './print-error.ts';

/** The environment every orch process reads; `orch --help` prints it after the commands. */
const ENVIRONMENT = `Environment:
  REDIS_URL        the cluster's Redis; unset, orch submit runs embedded (a private
                   redis-server that lives as long as the command)
  ORCH_PREFIX      key prefix in that Redis (default orch); every process of a cluster
                   uses the same one (orch worker --prefix; orch hosts up passes it on)
  ORCH_LOG         log level (default warn; info for serve and worker)
  ORCH_BUILD_DIR   build cache of command workloads (default ~/.cache/orch/builds)
  ORCH_GRAPHRT, ORCH_CPU_CARDS, ORCH_REDIS_SERVER
                   embedded submit: graphrt binary, cpu cards, redis-server binary`;

export function buildParser(argv: string[]) {
  let parser = yargs(argv)
    .scriptName('orch')
    .usage('$0 <command> [options]')
    .option('json', { type: 'boolean', default: false, global: true, describe: 'print machine-readable JSON on stdout' })
    .strict()
    .demandCommand(1, 'name a command')
    .recommendCommands()
    .help()
    .alias('h', 'help')
    .epilogue(ENVIRONMENT)
    .version(false)
    .wrap(100)
    .exitProcess(false)
    .fail((msg, err) => {
      if (err) throw err;
      const message = msg?.startsWith('Did you mean') ? `unknown command "${argv[0]}": ${msg}` : (msg ?? 'invalid command line');
      throw new UserInputError('CLI_USAGE', message, { hint: 'run orch --help for the commands and their options' });
    });
  for (const c of commands) parser = parser.command(c as never);
  return parser as unknown as { parseAsync(): Promise<GlobalOptions> };
}

/** Runs one command line; returns the exit code instead of exiting (tests call this). */
export async function runCli(argv: string[]): Promise<number> {
  try {
    await buildParser(argv).parseAsync();
    // A command whose outcome is a code, not an error (orch report's verdict), sets exitCode.
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    process.stderr.write(formatError(err));
    return exitCodeOf(err);
  }
}

export async function main(argv: string[]): Promise<never> {
  const code = await runCli(argv);
  process.exit(code);
}
