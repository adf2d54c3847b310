/**
 * The build phase of one experiment (orchestrator/scheduler/build-phase.ts), in the hash
 * `<prefix>:experiment:<id>:builds`: per host where its builds stand, and — once one failed so
 * that no retry helps — the failure that ended the experiment. Written by the scheduler's
 * leader; read by its grant pass (which hosts may take a block) and by `orch submit` (the
 * failure's code decides its exit code).
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { parseStored } from '../jobs/parse-stored.ts';
import { type OrchKeys, orchKeys } from './keys.ts';

export const HostBuildsSchema = z.object({
  /** building: its job is on the host's build queue; ready: every build is in the host's cache; retry: the last attempt failed transiently; given-up: no attempt left */
  state: z.enum(['building', 'ready', 'retry', 'given-up']),
  attempt: z.int().min(1),
  job: z.string(),
  since: z.number(),
  /** ready: when the job ended */
  ended: z.number().optional(),
  /** retry / given-up: why the last attempt failed */
  reason: z.string().optional(),
});
export type HostBuilds = z.infer<typeof HostBuildsSchema>;

export const BuildFailureSchema = z.object({
  /** a registered error code (jobs/error-codes.ts) when the failure carried one */
  code: z.string().nullable(),
  message: z.string(),
  host: z.string(),
  at: z.number(),
});
export type BuildFailure = z.infer<typeof BuildFailureSchema>;

/** The field of the failure: ':' never appears in a host name (jobs/name-patterns.ts HOST_NAME_PATTERN). */
const FAILED = ':failed';

export interface ExperimentBuilds {
  hosts: Map<string, HostBuilds>;
  failed: BuildFailure | null;
}

export class ExperimentBuildStore {
  private readonly keys: OrchKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = orchKeys(prefix);
  }

  async read(id: string): Promise<ExperimentBuilds> {
    const key = this.keys.builds(id);
    const raw = await this.redis.hgetall(key);
    const hosts = new Map<string, HostBuilds>();
    let failed: BuildFailure | null = null;
    for (const [field, json] of Object.entries(raw)) {
      if (field === FAILED) failed = parseStored(BuildFailureSchema, json, `${key} field ${field}`);
      else hosts.set(field, parseStored(HostBuildsSchema, json, `${key} field ${field}`));
    }
    return { hosts, failed };
  }

  async setHost(id: string, host: string, st: HostBuilds): Promise<void> {
    await this.redis.hset(this.keys.builds(id), host, JSON.stringify(HostBuildsSchema.parse(st)));
  }

  /** Records the failure that ends the experiment; the first one stays (HSETNX). Returns whether this one was recorded. */
  async fail(id: string, f: BuildFailure): Promise<boolean> {
    return (await this.redis.hsetnx(this.keys.builds(id), FAILED, JSON.stringify(BuildFailureSchema.parse(f)))) === 1;
  }

  async failure(id: string): Promise<BuildFailure | null> {
    const key = this.keys.builds(id);
    const raw = await this.redis.hget(key, FAILED);
    return raw === null ? null : parseStored(BuildFailureSchema, raw, `${key} field ${FAILED}`);
  }
}
