/**
 * The scheduler's signature on a queued job: a worker runs a block or a build only when the job
 * carries a grant made with the cluster secret, which the scheduler and the workers hold and
 * Redis never sees. Anyone who can write to Redis can enqueue a job on `host-<name>` or
 * `build-<name>`; without the secret they cannot make a grant for it, so the worker refuses it
 * before it touches a card or starts a process.
 *
 * The grant is an HMAC-SHA256 over a domain tag and the canonical JSON of everything BullMQ acts
 * on when it runs the job: the queue, the job's name and id, the options that schedule, repeat,
 * retry, delay or order it (jobControls), the payload (keys sorted, `grant` itself left out), a
 * random nonce and an expiry. So a signed job cannot be altered (another command, other cards),
 * moved to another host's queue, re-added under another id, given a `repeat` or more attempts,
 * nor replayed: the nonce is consumed once in Redis before anything runs
 * (store/job-nonces.ts), and it is remembered longer than the grant is valid.
 * Pure: node:crypto only.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from './spec-hash.ts';

/** The field of the job data that carries the grant. */
export const GRANT_FIELD = 'grant';
const TAG = 'orch-grant-v2';
/** A secret shorter than this is refused: it would be guessable. */
export const MIN_SECRET_BYTES = 16;
/**
 * How long a grant is valid after it was made. A block job is taken within seconds of its
 * lease; a build job may wait behind other experiments' builds on its host for hours.
 */
export const GRANT_TTL_MS = 24 * 3600 * 1000;

export interface Grant {
  v: 2;
  /** 32 hex digits, random: the job's one use */
  nonce: string;
  /** ms since the epoch after which the grant is refused */
  expires: number;
  /** hex HMAC-SHA256 */
  mac: string;
}

/** The options every signed job is added with: one BullMQ attempt, kept after it ends. */
export const SIGNED_JOB_OPTS = { attempts: 1, removeOnComplete: false, removeOnFail: false } as const;

/** What a worker sees of a job: the fields of BullMQ's Job the grant covers. */
export interface QueuedJob {
  queue: string;
  name: string;
  id: string | undefined;
  data: unknown;
  opts: Record<string, unknown>;
  /** Job.repeatJobKey: set on a job a job scheduler made (BullMQ keeps it outside opts) */
  repeatJobKey?: string | undefined;
}

/**
 * The options of a job that decide when and how often BullMQ runs it, in one canonical form: a
 * missing value and BullMQ's default are the same (attempts 0 and 1 both mean one attempt,
 * backoff as a number is BullMQ's fixed backoff). Anything else (a repeat, a delay, a retry
 * policy, a scheduler key) is signed as it is, so a job that carries one the scheduler did not
 * give it fails verification.
 */
export function jobControls(opts: Record<string, unknown>, repeatJobKey?: string): Record<string, unknown> {
  const attempts = opts.attempts === undefined || opts.attempts === 0 ? 1 : opts.attempts;
  const backoff = typeof opts.backoff === 'number' ? { type: 'fixed', delay: opts.backoff } : (opts.backoff ?? null);
  return {
    attempts,
    backoff,
    delay: opts.delay ?? 0,
    repeat: opts.repeat ?? null,
    repeatJobKey: repeatJobKey ?? opts.repeatJobKey ?? null,
    priority: opts.priority ?? 0,
    lifo: opts.lifo ?? false,
    parent: opts.parent ?? null,
  };
}

/** A fresh random cluster secret (the embedded default makes one per run). */
export function newClusterSecret(): Buffer {
  return randomBytes(32);
}

/** HMAC-SHA256 of `value`'s canonical JSON under a domain tag (the nightly template grant uses it too). */
export function macOf(tag: string, value: unknown, secret: Buffer): Buffer {
  requireSecret(secret);
  return createHmac('sha256', secret)
    .update(`${tag}\n${canonicalJson(value)}`)
    .digest();
}

/** Whether `hex` is the MAC `expected`, in constant time. */
export function macMatches(hex: unknown, expected: Buffer): boolean {
  if (typeof hex !== 'string' || !/^[0-9a-f]{64}$/.test(hex)) return false;
  const given = Buffer.from(hex, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function signed(job: Omit<QueuedJob, 'data'>, rest: Record<string, unknown>, nonce: string, expires: number): unknown {
  return {
    queue: job.queue,
    name: job.name,
    id: job.id ?? null,
    controls: jobControls(job.opts, job.repeatJobKey),
    data: rest,
    nonce,
    expires,
  };
}

/**
 * A job ready for `queue.add(name, data, opts)`: the payload with its grant, over exactly the
 * name, id and options it is added with.
 */
export function signJob<T extends object>(
  queue: string,
  name: string,
  jobId: string,
  payload: T,
  secret: Buffer,
  now = Date.now(),
): { name: string; data: T & { grant: Grant }; opts: typeof SIGNED_JOB_OPTS & { jobId: string } } {
  const opts = { ...SIGNED_JOB_OPTS, jobId };
  const nonce = randomBytes(16).toString('hex');
  const expires = now + GRANT_TTL_MS;
  const { [GRANT_FIELD]: _ignored, ...rest } = payload as Record<string, unknown>;
  const mac = macOf(TAG, signed({ queue, name, id: jobId, opts }, rest, nonce, expires), secret).toString('hex');
  return { name, data: { ...payload, [GRANT_FIELD]: { v: 2, nonce, expires, mac } }, opts };
}

export type GrantCheck =
  | { ok: true; nonce: string; expires: number }
  | { ok: false; code: 'GRANT_MISSING' | 'GRANT_INVALID'; why: string };

/** Whether `job` carries a valid, unexpired grant for its own queue, name, id, options and payload. */
export function verifyJob(job: QueuedJob, secret: Buffer, now = Date.now()): GrantCheck {
  requireSecret(secret);
  const data = job.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return { ok: false, code: 'GRANT_MISSING', why: 'the job data is not an object' };
  const { [GRANT_FIELD]: grant, ...rest } = data as Record<string, unknown>;
  if (grant === undefined) return { ok: false, code: 'GRANT_MISSING', why: 'the job carries no grant' };
  const g = grant as Partial<Grant> | null;
  if (
    typeof g !== 'object' ||
    g === null ||
    g.v !== 2 ||
    typeof g.nonce !== 'string' ||
    !/^[0-9a-f]{32}$/.test(g.nonce) ||
    !Number.isSafeInteger(g.expires)
  ) {
    return { ok: false, code: 'GRANT_INVALID', why: 'the grant is malformed' };
  }
  const expected = macOf(TAG, signed(job, rest, g.nonce, g.expires!), secret);
  if (!macMatches(g.mac, expected)) {
    return {
      ok: false,
      code: 'GRANT_INVALID',
      why: 'the grant does not match the job (another secret, or its payload, name, id, queue or options — repeat, delay, attempts, backoff — were altered)',
    };
  }
  if (now > g.expires!)
    return { ok: false, code: 'GRANT_INVALID', why: `the grant expired at ${new Date(g.expires!).toISOString()}` };
  return { ok: true, nonce: g.nonce, expires: g.expires! };
}

function requireSecret(secret: Buffer): void {
  if (secret.length < MIN_SECRET_BYTES)
    throw new Error(`the cluster secret has ${secret.length} bytes; at least ${MIN_SECRET_BYTES} are needed`);
}
