/** A nightly suite (`kind: suite`): experiments submitted together on a cron schedule. */
import { z } from 'zod';
import { cronProblem } from './cron.ts';
import { NameSchema, strictObject } from './spec/strict-object.ts';

export const SuiteSchema = strictObject({
  kind: z.literal('suite'),
  name: NameSchema,
  schedule: strictObject({
    /** Five-field cron (minute hour day-of-month month day-of-week), as BullMQ parses it (jobs/cron.ts). */
    cron: z.string().superRefine((s, ctx) => {
      const problem = cronProblem(s);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
    /** IANA time zone, e.g. Europe/Berlin. */
    tz: z.string().refine(isTimeZone, { error: 'unknown IANA time zone (e.g. "UTC", "Europe/Berlin")' }).default('UTC'),
  }),
  /** Spec files, relative to the suite file. */
  experiments: z.array(z.string().min(1)).min(1),
});
export type Suite = z.infer<typeof SuiteSchema>;

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
