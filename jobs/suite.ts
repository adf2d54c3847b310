/** A nightly suite (`kind: suite`): experiments submitted together on a cron schedule. */
import { z } from 'zod';
import { cronProblem } from './cron.ts';
import { NameSchema, strictObject } from './spec-schema/strict-object.ts';

/**
 * A paired nightly entry: tonight's commit and the last commit whose nightly passed become the
 * two builds of one experiment, interleaved on the same cards, so a regression is found within
 * one night by a paired test. The spec is an A/B whose two arms each name a build: the first
 * arm's build is set to the last good commit, the second arm's to tonight's. Before any night
 * passed, both are tonight's commit (an A/A, said so in the night's rows).
 */
export const PairedEntrySchema = strictObject({
  /** The spec file, relative to the suite file. */
  spec: z.string().min(1),
  against: z.literal('last_good'),
  /** Tonight's commit: this ref of the spec's repository (default: its HEAD). */
  ref: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[^\s\0-]/, { error: 'a git ref (a branch, tag or commit); it may not start with "-" or a space' })
    .optional(),
});
export type PairedEntry = z.infer<typeof PairedEntrySchema>;
export type SuiteEntry = string | PairedEntry;

/** The spec file an entry names, relative to the suite file. */
export function entryFile(e: SuiteEntry): string {
  return typeof e === 'string' ? e : e.spec;
}

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
  /** Spec files, relative to the suite file; an entry may instead pair tonight's commit with the last good one. */
  experiments: z.array(z.union([z.string().min(1), PairedEntrySchema])).min(1),
  /** Where each night writes results/<experiment>/, relative to the suite file (default: results next to it). */
  results: z.string().min(1).optional(),
  /**
   * The night's comparisons are corrected together (Benjamini–Hochberg) at this false discovery
   * rate before a regression is alerted; absent: 0.05 (orchestrator/nightly/night-findings.ts
   * says why; optional, so suites keep their hash).
   */
  false_discovery_rate: z.number().gt(0).lt(1).optional(),
  /** Who hears of a regression, an invalid night or a night that could not run (ORCH_ALERT_WEBHOOK adds a webhook). */
  alerts: strictObject({
    /** POSTed a JSON body with a Slack-compatible `text` field. */
    webhook: z
      .url({ protocol: /^https?$/, error: 'expected an http(s) URL, e.g. https://hooks.slack.com/services/…' })
      .optional(),
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
