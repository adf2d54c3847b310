/**
 * The pino logger of the orchestrator's processes: JSON lines on stderr (stdout is the
 * command's output), level from ORCH_LOG (default `warn` for one-shot commands, `info` for
 * `orch serve`), bound to the process role.
 */
import { pino, type Logger } from 'pino';

export function orchLog(role: string, level = process.env.ORCH_LOG ?? 'warn'): Logger {
  return pino({ level, base: { role, pid: process.pid } }, pino.destination(2));
}
