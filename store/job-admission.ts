/**
 * The gate in front of everything a worker runs from its queues (`host-<name>` blocks,
 * `build-<name>` builds): the job's grant must verify over its queue, name, id, options and
 * payload (jobs/grant.ts), and its nonce must be unused, consumed here in Redis
 * (store/job-nonces.ts) before the executor or a build starts a process. A refused job is
 * counted (store/refused-jobs.ts) and logged by its id and code only: its payload came from
 * whoever wrote to Redis and is never echoed. A job a job scheduler made (no scheduler is ever
 * installed on these queues by orch) has its scheduler removed, so it stops producing copies.
 */
import type { Job, Queue } from 'bullmq';
import type { Logger } from 'pino';
import { OrchError } from '../jobs/errors.ts';
import { verifyJob } from '../jobs/grant.ts';
import type { JobNonces } from './job-nonces.ts';
import type { RefusedJobs, RefusedQueue } from './refused-jobs.ts';

export interface AdmissionContext {
  secret: Buffer;
  nonces: JobNonces;
  refused: RefusedJobs;
  log: Logger;
}

/** A job id fit for a log line: an id made by orch, else how long the one given was. */
export function loggableJobId(id: string | undefined): string {
  return id !== undefined && /^[A-Za-z0-9_.@:-]{1,200}$/.test(id) ? id : `(an id of ${id?.length ?? 0} characters)`;
}

export class JobAdmission {
  constructor(
    private readonly kind: RefusedQueue,
    private readonly queue: Pick<Queue, 'name' | 'removeJobScheduler'>,
    private readonly ctx: AdmissionContext,
  ) {}

  /** Resolves when `job` may run; throws an OrchError (deterministic: never retried) otherwise. */
  async admit(job: Pick<Job, 'id' | 'name' | 'data' | 'opts' | 'repeatJobKey'>): Promise<void> {
    const id = loggableJobId(job.id);
    const check = verifyJob(
      {
        queue: this.queue.name,
        name: job.name,
        id: job.id,
        data: job.data,
        opts: job.opts as Record<string, unknown>,
        repeatJobKey: job.repeatJobKey,
      },
      this.ctx.secret,
    );
    if (!check.ok) {
      await this.refuse(id, check.code, check.why, job.repeatJobKey);
      return;
    }
    if (!(await this.ctx.nonces.consume(check.nonce, check.expires, job.id ?? '', this.kind))) {
      // counted by the script itself, atomically with the check
      this.ctx.log.error(
        { job: id, queue: this.queue.name, code: 'GRANT_REPLAYED' },
        'refused a replayed job (its nonce was used before): nothing ran',
      );
      throw new OrchError(
        'GRANT_REPLAYED',
        `job ${id} on ${this.queue.name} refused: its grant's nonce was used before (a copy of a job already taken); nothing ran`,
      );
    }
  }

  private async refuse(
    id: string,
    code: 'GRANT_MISSING' | 'GRANT_INVALID',
    why: string,
    repeatJobKey: string | undefined,
  ): Promise<never> {
    await this.ctx.refused
      .count(this.kind, code)
      .catch((err: unknown) => this.ctx.log.warn({ err }, 'could not count a refused job'));
    if (repeatJobKey !== undefined) {
      await this.queue
        .removeJobScheduler(repeatJobKey)
        .catch((err: unknown) =>
          this.ctx.log.warn({ err, job: id }, 'could not remove the job scheduler of a refused job'),
        );
    }
    this.ctx.log.error(
      { job: id, queue: this.queue.name, code, why, scheduler_removed: repeatJobKey !== undefined },
      'refused a job without a valid grant: nothing ran',
    );
    throw new OrchError(code, `job ${id} on ${this.queue.name} refused: ${why}; nothing ran`);
  }
}
