/**
 * The submitter's signature on an experiment: whoever can write to Redis can register an
 * experiment there, so the scheduler plans and grants only one whose record carries an HMAC made
 * with the submit token, a credential of the submitters and the scheduler alone — not the Redis
 * password, not the cluster secret the workers hold.
 *
 * The HMAC-SHA256 is over a domain tag and the canonical JSON (jobs/spec-hash.ts) of everything of
 * the record the scheduler acts on: the id, the spec hash, the priority, the YAML as submitted,
 * the spec as parsed and the plan. A signed record cannot be altered (another command in its
 * spec, another plan) nor its signature moved to another id. Pure: node:crypto only.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from './spec-hash.ts';

const TAG = 'orch-submit-v1';
/** A token shorter than this is refused: it would be guessable. */
export const MIN_SUBMIT_TOKEN_BYTES = 16;

/** What the signature covers: the fields of a registered experiment the scheduler reads. */
export interface SignedSubmission {
  id: string;
  hash: string;
  priority: number;
  /** the YAML as submitted */
  specText: string;
  /** the spec and the plan as registered (JSON values) */
  spec: unknown;
  plan: unknown;
}

function mac(s: SignedSubmission, token: Buffer): Buffer {
  if (token.length < MIN_SUBMIT_TOKEN_BYTES)
    throw new Error(`the submit token has ${token.length} bytes; at least ${MIN_SUBMIT_TOKEN_BYTES} are needed`);
  const body = canonicalJson({
    id: s.id,
    hash: s.hash,
    priority: s.priority,
    spec_text: s.specText,
    spec: s.spec,
    plan: s.plan,
  });
  return createHmac('sha256', token).update(`${TAG}\n${body}`).digest();
}

/** The hex signature of a submission. */
export function signSubmission(s: SignedSubmission, token: Buffer): string {
  return mac(s, token).toString('hex');
}

/** Why `signature` does not sign `s` under `token`, or null when it does. */
export function submissionRefusal(s: SignedSubmission, signature: string | null, token: Buffer): string | null {
  if (signature === null || signature === '') return 'it carries no submit signature';
  if (!/^[0-9a-f]{64}$/.test(signature)) return 'its submit signature is malformed';
  const given = Buffer.from(signature, 'hex');
  const expected = mac(s, token);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return 'its submit signature does not verify (another submit token, or the record was altered after submit)';
  return null;
}
