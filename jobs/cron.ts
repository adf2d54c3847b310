/**
 * Cron expressions of nightly suites, checked with the parser BullMQ's job schedulers use
 * (cron-parser, pinned in package.json to the version bullmq depends on), so an expression
 * `orch validate` accepts is one `orch serve` can schedule, and the next run times printed by
 * `orch nightly list` are the ones BullMQ computes.
 */
import { CronExpressionParser } from 'cron-parser';

/** Why BullMQ could not schedule `expr` in time zone `tz`, or null when it can. */
export function cronProblem(expr: string, tz = 'UTC'): string | null {
  if (expr.trim().split(/\s+/).length !== 5) return 'expected a five-field cron expression, e.g. "0 2 * * *"';
  try {
    // next(): an expression that parses but never fires (no such date) throws here
    CronExpressionParser.parse(expr, { tz }).next();
    return null;
  } catch (err) {
    return `cron-parser (the parser of BullMQ's schedules) refuses it: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** The next `n` run times of a cron expression after `from`, as BullMQ schedules them. */
export function nextCronRuns(expr: string, tz: string, n: number, from = new Date()): Date[] {
  const it = CronExpressionParser.parse(expr, { tz, currentDate: from });
  return Array.from({ length: n }, () => it.next().toDate());
}
