/**
 * Nightly suites as BullMQ job schedulers (queue names in store/keys.ts): one scheduler per
 * suite on queue `nightly`, id = the suite's name, cron + time zone from the suite file. The
 * scheduler's job carries where the suite's specs, results and alert sinks are, and its
 * schedule, signed at install with the cluster secret (nightly-grant.ts); `orch serve` consumes
 * it (nightly-processor.ts) when the signature holds: one night submits, waits, records and
 * alerts. An alert file outside the results root (and ORCH_ALERT_DIR) is refused at install.
 */
import { dirname, resolve } from 'node:path';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { SpecError, UserInputError } from '../../jobs/errors.ts';
import { entryFile, type PairedEntry, type Suite } from '../../jobs/suite.ts';
import { QUEUES } from '../../store/keys.ts';
import { loadConfigFile, loadSpec } from '../spec/load-spec.ts';
import { alertFileProblem, alertRoots } from './alert-file.ts';
import { type NightlyGrant, type NightlySchedule, signNightlyTemplate } from './nightly-grant.ts';
import { pairingProblem } from './paired-night.ts';

/** The data of every job a suite's scheduler produces. */
export interface NightlyJobData {
  suite: string;
  /** absolute path of the suite file (messages only) */
  file: string;
  /** absolute paths of the experiment specs, in the suite's order */
  experiments: string[];
  /** the paired entries (against: last_good, paired-night.ts): the spec's absolute path and tonight's ref (null: HEAD) */
  paired?: { file: string; ref: string | null }[];
  /** absolute results root (default: results next to the suite file) */
  results?: string;
  /** alert sinks; `file` absolute, or `-` for stdout */
  alerts?: { webhook?: string; file?: string };
  /** the suite's false_discovery_rate: the night's comparisons corrected together (night-findings.ts) */
  false_discovery_rate?: number;
  /** the schedule the scheduler was installed with: a job whose repeat options differ is refused */
  schedule: NightlySchedule;
  /** the installer's signature over every other field (nightly-grant.ts) */
  grant: NightlyGrant;
}

export interface InstalledSuite {
  name: string;
  cron: string | null;
  tz: string | null;
  every: number | null;
  next: number | null;
  experiments: string[];
}

/** Job name of a suite run (the scheduler id is the suite's name). */
export const NIGHTLY_JOB = 'nightly-suite';

export class NightlySuites {
  private readonly queue: Queue<NightlyJobData>;

  /** `secret`: the cluster secret a suite's template is signed with; install needs it, nothing else does */
  constructor(
    redis: Redis,
    prefix: string,
    private readonly secret?: Buffer,
  ) {
    this.queue = new Queue<NightlyJobData>(QUEUES.nightly, { connection: redis, prefix });
  }

  /**
   * Validates the suite and every spec it names (a SpecError with file, line and path otherwise;
   * nothing is written), then upserts its scheduler: installing again replaces, never duplicates.
   * `every` (ms) replaces the cron for tests.
   */
  async install(file: string, opts: { every?: number } = {}): Promise<InstalledSuite> {
    const loaded = loadConfigFile(file);
    if (loaded.kind !== 'suite') {
      throw new SpecError([
        {
          file,
          line: 1,
          path: 'kind',
          message: `this is a ${loaded.kind} file, not a suite`,
          fix: 'add kind: suite, or pass a suite file',
        },
      ]);
    }
    const { suite } = loaded;
    const absolute = resolve(file);
    const at = (rel: string) => resolve(dirname(absolute), rel);
    const paired = suite.experiments
      .filter((e): e is PairedEntry => typeof e !== 'string')
      .map((e) => ({ file: at(e.spec), ref: e.ref ?? null }));
    checkPaired(file, suite, paired);
    if (!this.secret)
      throw new UserInputError('CLUSTER_SECRET', 'orch nightly install has no cluster secret to sign the suite with', {
        hint: 'give it the secret orch serve has: --secret-file FILE or ORCH_CLUSTER_SECRET',
      });
    const schedule: NightlySchedule =
      opts.every !== undefined ? { every: opts.every } : { cron: suite.schedule.cron, tz: suite.schedule.tz };
    const data: Omit<NightlyJobData, 'grant'> = {
      suite: suite.name,
      file: absolute,
      experiments: suite.experiments.map((e) => at(entryFile(e))),
      ...(paired.length > 0 ? { paired } : {}),
      ...(suite.results ? { results: resolve(dirname(absolute), suite.results) } : {}),
      ...(suite.alerts
        ? {
            alerts: {
              ...(suite.alerts.webhook ? { webhook: suite.alerts.webhook } : {}),
              ...(suite.alerts.file
                ? { file: suite.alerts.file === '-' ? '-' : resolve(dirname(absolute), suite.alerts.file) }
                : {}),
            },
          }
        : {}),
      ...(suite.false_discovery_rate === undefined ? {} : { false_discovery_rate: suite.false_discovery_rate }),
      schedule,
    };
    checkAlertFile(file, data);
    const repeat = 'every' in schedule ? { every: schedule.every } : { pattern: schedule.cron, tz: schedule.tz };
    await this.queue.upsertJobScheduler(suite.name, repeat, {
      name: NIGHTLY_JOB,
      data: signNightlyTemplate(data, this.secret),
    });
    return (await this.get(suite.name))!;
  }

  async get(name: string): Promise<InstalledSuite | null> {
    const s = await this.queue.getJobScheduler(name);
    return s ? toInstalled(s) : null;
  }

  /** The installed suite's signed job data, as each night's job carries it; null when none of that name is installed. */
  async template(name: string): Promise<NightlyJobData | null> {
    return (await this.queue.getJobScheduler(name))?.template?.data ?? null;
  }

  async list(): Promise<InstalledSuite[]> {
    const all = await this.queue.getJobSchedulers(0, -1, true);
    return all.map(toInstalled).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** True when a scheduler of that name existed. */
  async remove(name: string): Promise<boolean> {
    return this.queue.removeJobScheduler(name);
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

/** The results root of a night: the suite's `results`, else results next to the suite file. */
export function resultsRootOf(data: Pick<NightlyJobData, 'results' | 'file'>): string {
  return data.results ?? resolve(dirname(data.file), 'results');
}

/** An alert file must be where alerts may be written (alert-file.ts); refused at install, nothing written. */
function checkAlertFile(file: string, data: Omit<NightlyJobData, 'grant'>): void {
  const alert = data.alerts?.file;
  if (alert === undefined || alert === '-') return;
  const problem = alertFileProblem(alert, alertRoots(resultsRootOf(data)));
  if (problem)
    throw new SpecError([
      {
        file,
        line: 1,
        path: 'alerts.file',
        message: problem,
        fix: `put it under the results directory (e.g. results/alerts.jsonl) or under a directory orch serve names in ORCH_ALERT_DIR`,
      },
    ]);
}

/** A paired entry's spec must have the two builds the night sets; refused at install, nothing written. */
function checkPaired(file: string, suite: Suite, paired: { file: string }[]): void {
  const issues = paired.flatMap((p) => {
    const problem = pairingProblem(loadSpec(p.file).spec);
    const i = suite.experiments.findIndex(
      (e) => typeof e !== 'string' && resolve(dirname(resolve(file)), e.spec) === p.file,
    );
    return problem ? [{ file, line: 1, path: `experiments[${i}].spec`, message: `${p.file}: ${problem}` }] : [];
  });
  if (issues.length > 0) throw new SpecError(issues);
}

function toInstalled(s: Awaited<ReturnType<Queue<NightlyJobData>['getJobSchedulers']>>[number]): InstalledSuite {
  return {
    name: s.key,
    cron: s.pattern ?? null,
    tz: s.tz ?? null,
    every: s.every ?? null,
    next: s.next ?? null,
    experiments: s.template?.data?.experiments ?? [],
  };
}
