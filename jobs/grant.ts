/**
 * The scheduler's signature on a host job: a worker runs a block only when its payload carries a
 * grant made with the cluster secret, which the scheduler and the workers hold and Redis never
 * sees. Anyone who can write to Redis can enqueue a job on `host-<name>`; without the secret they
 * cannot make a grant for it, so the worker refuses it before it touches a card.
 *
 * The grant is an HMAC-SHA256 over a domain tag, the epoch and the canonical JSON of the payload
 * (keys sorted, `grant` itself left out), so a signed payload cannot be altered (another command,
 * other cards) nor replayed under another epoch. Pure: node:crypto only.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The field of the job data that carries the grant. */
export const GRANT_FIELD = 'grant';
const TAG = 'orch-grant-v1';
/** A secret shorter than this is refused: it would be guessable. */
export const MIN_SECRET_BYTES = 16;

export interface Grant {
  v: 1;
  /** hex HMAC-SHA256 */
  mac: string;
}

/** A fresh random cluster secret (the embedded default makes one per run). */
export function newClusterSecret(): Buffer {
  return randomBytes(32);
}

/** JSON with object keys sorted at every depth; undefined fields dropped, as JSON.stringify does. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

function mac(payload: Record<string, unknown>, epoch: unknown, secret: Buffer): Buffer {
  const { [GRANT_FIELD]: _ignored, ...rest } = payload;
  return createHmac('sha256', secret).update(`${TAG}\n${String(epoch)}\n${canonicalJson(rest)}`).digest();
}

/** The payload with the scheduler's grant added. */
export function signPayload<T extends { epoch: number }>(payload: T, secret: Buffer): T & { grant: Grant } {
  requireSecret(secret);
  return { ...payload, [GRANT_FIELD]: { v: 1, mac: mac(payload as unknown as Record<string, unknown>, payload.epoch, secret).toString('hex') } };
}

export type GrantCheck = { ok: true } | { ok: false; code: 'GRANT_MISSING' | 'GRANT_INVALID'; why: string };

/** Whether `data` (a job's raw data) carries a valid grant for its own content and epoch. */
export function verifyPayload(data: unknown, secret: Buffer): GrantCheck {
  requireSecret(secret);
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return { ok: false, code: 'GRANT_MISSING', why: 'the job data is not an object' };
  const record = data as Record<string, unknown>;
  const grant = record[GRANT_FIELD] as Partial<Grant> | undefined;
  if (grant === undefined) return { ok: false, code: 'GRANT_MISSING', why: 'the job carries no grant' };
  if (typeof grant !== 'object' || grant === null || grant.v !== 1 || typeof grant.mac !== 'string' || !/^[0-9a-f]{64}$/.test(grant.mac)) {
    return { ok: false, code: 'GRANT_INVALID', why: 'the grant is malformed' };
  }
  if (typeof record.epoch !== 'number' || !Number.isSafeInteger(record.epoch)) return { ok: false, code: 'GRANT_INVALID', why: 'the job has no integer epoch' };
  const expected = mac(record, record.epoch, secret);
  const given = Buffer.from(grant.mac, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, code: 'GRANT_INVALID', why: 'the grant does not match the payload (another secret, or the payload was altered)' };
  }
  return { ok: true };
}

function requireSecret(secret: Buffer): void {
  if (secret.length < MIN_SECRET_BYTES) throw new Error(`the cluster secret has ${secret.length} bytes; at least ${MIN_SECRET_BYTES} are needed`);
}
