/**
 * Which jobs on queue `nightly` `orch serve` runs: only those its suite's signed job scheduler
 * made. `orch nightly install` signs the scheduler's template data with the cluster secret over
 * everything a night acts on — the suite's name, its schedule (cron and time zone, or the tests'
 * interval), the spec files, the paired entries, the results root and the alert sinks — and
 * BullMQ copies that data into each job it makes. A job is admitted when
 *
 * - its data's grant verifies (nothing of it altered; made by someone holding the secret),
 * - it is that scheduler's job: name `nightly-suite`, scheduler key = the suite, id
 *   `repeat:<suite>:<ms>`, its repeat options the signed schedule, one attempt, no backoff,
 * - `<ms>`, the night it is bound to, is an occurrence of the signed cron, not in the future and
 *   young enough that its night claim (store/nightly-claims.ts, a week) is still held: a copy of
 *   a night's job is that night again, which its claim lets run once.
 *
 * Anything else is refused with a reason that quotes nothing of the job.
 */

import type { Job } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';
import { macMatches, macOf } from '../../jobs/grant.ts';
import { NIGHTLY_CLAIM_TTL_MS } from '../../store/nightly-claims.ts';

const TAG = 'orch-nightly-v1';
/** A night's job may start this long before its time (clocks of two machines). */
const EARLY_MS = 5 * 60_000;
/** A night older than this is refused: its claim may expire before the night would end. */
export const OLDEST_NIGHT_MS = NIGHTLY_CLAIM_TTL_MS - 24 * 3600 * 1000;

export type NightlySchedule = { cron: string; tz: string } | { every: number };

export interface NightlyGrant {
  v: 1;
  mac: string;
}

/** The template data with its grant over every other field. */
export function signNightlyTemplate<T extends { schedule: NightlySchedule }>(
  data: T,
  secret: Buffer,
): T & { grant: NightlyGrant } {
  const { grant: _ignored, ...rest } = data as T & { grant?: unknown };
  return { ...data, grant: { v: 1, mac: macOf(TAG, rest, secret).toString('hex') } };
}

export type NightlyAdmission = { ok: true; scheduledAt: number } | { ok: false; why: string };

/**
 * Whether `data` carries a grant over everything else in it, made with `secret`: what `orch
 * nightly install` signed, unaltered. `orch nightly run` runs a night from the installed template
 * on this alone (it is no scheduler's job: the job checks below do not apply).
 */
export function verifyNightlyTemplate(data: object, secret: Buffer): { ok: true } | { ok: false; why: string } {
  const { grant, ...rest } = data as Record<string, unknown>;
  if (grant === undefined)
    return { ok: false, why: 'its data carries no grant (a suite is installed with orch nightly install)' };
  const g = grant as Partial<NightlyGrant> | null;
  if (typeof g !== 'object' || g === null || g.v !== 1 || !macMatches(g.mac, macOf(TAG, rest, secret))) {
    return { ok: false, why: 'its grant does not match its data (another secret, or the data was altered)' };
  }
  return { ok: true };
}

/** Whether `job` is a night of a suite installed with `secret` (see the file comment). */
export function admitNightlyJob(
  job: Pick<Job, 'id' | 'name' | 'data' | 'opts' | 'repeatJobKey'>,
  secret: Buffer,
  jobName: string,
  now = Date.now(),
): NightlyAdmission {
  const data = job.data as unknown;
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return { ok: false, why: 'its data is not an object' };
  const signed = verifyNightlyTemplate(data, secret);
  if (!signed.ok) return signed;
  const rest = data as Record<string, unknown>;
  // signed: the suite and its schedule are the installer's own from here on
  const suite = rest.suite as string;
  const schedule = rest.schedule as NightlySchedule;
  if (job.name !== jobName) return { ok: false, why: `its name is not ${jobName}` };
  if (job.repeatJobKey !== suite) return { ok: false, why: `it was not made by the job scheduler of suite ${suite}` };
  const m = /^repeat:(.+):(\d{12,16})$/.exec(job.id ?? '');
  if (!m || m[1] !== suite)
    return { ok: false, why: `its id is not one the scheduler of suite ${suite} gives (repeat:${suite}:<ms>)` };
  const at = Number(m[2]);
  const opts = job.opts as Record<string, unknown>;
  if ((typeof opts.attempts === 'number' && opts.attempts > 1) || opts.backoff !== undefined)
    return { ok: false, why: 'it carries retry options the installed suite does not set' };
  const repeat = (opts.repeat ?? {}) as Record<string, unknown>;
  if ('cron' in schedule) {
    if (repeat.pattern !== schedule.cron || (repeat.tz ?? 'UTC') !== schedule.tz || repeat.every !== undefined)
      return { ok: false, why: 'its repeat options are not the signed schedule' };
    if (!isOccurrence(schedule.cron, schedule.tz, at))
      return { ok: false, why: `its time ${new Date(at).toISOString()} is not a run time of the signed cron` };
  } else if (repeat.every !== schedule.every || repeat.pattern !== undefined) {
    return { ok: false, why: 'its repeat options are not the signed schedule' };
  }
  if (at > now + EARLY_MS) return { ok: false, why: `its night ${new Date(at).toISOString()} is in the future` };
  if (at < now - OLDEST_NIGHT_MS)
    return { ok: false, why: `its night ${new Date(at).toISOString()} is older than its claim would be kept` };
  return { ok: true, scheduledAt: at };
}

function isOccurrence(cron: string, tz: string, at: number): boolean {
  try {
    return (
      CronExpressionParser.parse(cron, { tz, currentDate: new Date(at - 1) })
        .next()
        .getTime() === at
    );
  } catch {
    return false;
  }
}
