/**
 * The scheduler's side of dispatch: one host job per host of a granted gang on queue
 * `host-<host>`, with the deterministic id `<experiment>.b<block>-a<attempt>-<host>`, so adding
 * it again (a new leader re-attaching) is a no-op, and reading its state is all a leader needs
 * to re-attach.
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { BlockJob } from '../../jobs/block-job.ts';
import { hostJobId, hostQueue } from '../redis/keys.ts';

export type HostJobState = 'pending' | 'completed' | 'failed' | 'missing';

export interface HostJobStatus {
  state: HostJobState;
  reason: string | null;
}

export class HostJobs {
  private readonly queues = new Map<string, Queue>();

  constructor(
    private readonly connection: Redis,
    private readonly prefix: string,
  ) {}

  private queue(host: string): Queue {
    let q = this.queues.get(host);
    if (!q) {
      q = new Queue(hostQueue(host), { connection: this.connection, prefix: this.prefix });
      this.queues.set(host, q);
    }
    return q;
  }

  static id(job: Pick<BlockJob, 'experiment' | 'block' | 'attempt' | 'host'>): string {
    return hostJobId(job.experiment, job.block, job.attempt, job.host);
  }

  /** Adds the host job unless a job with its id exists (BullMQ keeps the first). */
  async dispatch(job: BlockJob): Promise<string> {
    const id = HostJobs.id(job);
    await this.queue(job.host).add('block', job, { jobId: id, attempts: 1, removeOnComplete: false, removeOnFail: false });
    return id;
  }

  async status(host: string, id: string): Promise<HostJobStatus> {
    const job = await this.queue(host).getJob(id);
    if (!job) return { state: 'missing', reason: null };
    const state = await job.getState();
    if (state === 'completed') return { state: 'completed', reason: null };
    if (state === 'failed') return { state: 'failed', reason: job.failedReason ?? 'failed' };
    if (state === 'unknown') return { state: 'missing', reason: null };
    return { state: 'pending', reason: null };
  }

  /** Removes a host job that never started or whose worker died; false when it is locked. */
  async discard(host: string, id: string): Promise<boolean> {
    const job = await this.queue(host).getJob(id);
    if (!job) return true;
    try {
      await job.remove();
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}
