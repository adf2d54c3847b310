/**
 * Cron expressions of nightly suites, checked with the parser BullMQ's job schedulers use
 * (cron-parser, pinned in package.json to the version bullmq depends on), so an expression
 * `orch validate` accepts is one `orch serve` can schedule, and the next run times printed by
 * `orch nightly list` are the ones BullMQ computes.
 */
import { CronExpressionParser } from 'cron-parser';
import { messageOf } from './message-of.ts';

/** Why BullMQ could not schedule `expr` in time zone `tz`, or null when it can. */
export function cronProblem(expr: string, tz = 'UTC'): string | null {
  if (expr.trim().split(/\s+/).length !== 5) return 'expected a five-field cron expression, e.g. "0 2 * * *"';
  try {
    // next(): an expression that parses but never fires (no such date) throws here
    CronExpressionParser.parse(expr, { tz }).next();
    return null;
  } catch (err) {
    return cronMessage(expr, messageOf(err));
  }
}

const FIELDS = [
  { name: 'minute', range: '0-59' },
  { name: 'hour', range: '0-23' },
  { name: 'day of month', range: '1-31' },
  { name: 'month', range: '1-12' },
  { name: 'day of week', range: '0-7' },
] as const;

/**
 * orch's words for the parser's refusal: the field at fault and what it allows, or, for a date no
 * calendar has (31 2, 30 2, 31 in April and June), that the schedule would never fire. The
 * parser's own text stays only as a last resort, in parentheses.
 */
function cronMessage(expr: string, raw: string): string {
  const fields = expr.trim().split(/\s+/);
  const range = /got value (\S+) expected range (\d+-\d+)/.exec(raw);
  const field = range ? FIELDS.find((f) => f.range === range[2]) : undefined;
  if (range && field) return `${field.name} ${range[1]} is out of range: the ${field.name} field takes ${field.range}`;
  const chars = /Invalid characters, got value: (.*)$/.exec(raw);
  if (chars)
    return `"${chars[1]}" is not a cron value: each field takes numbers, *, ranges (1-5), lists (1,15) and steps (*/10)`;
  if (/day of month|loop limit/i.test(raw)) {
    return `day of month ${fields[2]} never occurs in month ${fields[3]}: this schedule would never fire; pick a day every listed month has (1-28 in February)`;
  }
  return `not a schedule BullMQ can run (${raw})`;
}

/** The next `n` run times of a cron expression after `from`, as BullMQ schedules them. */
export function nextCronRuns(expr: string, tz: string, n: number, from = new Date()): Date[] {
  const it = CronExpressionParser.parse(expr, { tz, currentDate: from });
  return Array.from({ length: n }, () => it.next().toDate());
}
