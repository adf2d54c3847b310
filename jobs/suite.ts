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
  /** Where each night writes results/<experiment>/, relative to the suite file (default: results next to it). */
  results: z.string().min(1).optional(),
  /** Who hears of a regression, an invalid night or a night that could not run (ORCH_ALERT_WEBHOOK adds a webhook). */
  alerts: strictObject({
    /** POSTed a JSON body with a Slack-compatible `text` field. */
    webhook: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL, e.g. https://hooks.slack.com/services/…' }).optional(),
    /** One JSON line per alert appended to this file (relative to the suite file); `-` is orch serve's stdout. */
    file: z.string().min(1).optional(),
  }).optional(),
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
