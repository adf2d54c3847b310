/**
 * One command rep in its own process, as a worker runs it: ORCH_TEST_REP = JSON CommandRepInput
 * (without callbacks). Prints the result (or { error }) as one JSON line. The fate-sharing test
 * kills this process with -9 in the middle of the rep.
 */
import { type CommandRepInput, runCommandRep } from '../../worker/command/run-command-rep.ts';

const input = JSON.parse(process.env.ORCH_TEST_REP ?? '{}') as CommandRepInput;
try {
  process.stdout.write(`${JSON.stringify(await runCommandRep(input))}\n`);
} catch (err) {
  const e = err as { code?: string; message: string };
  process.stdout.write(`${JSON.stringify({ error: { code: e.code, message: e.message } })}\n`);
  process.exitCode = 3;
}
