/**
 * Where `orch submit` and the scheduler find the submit token (jobs/submit-signature.ts): a file
 * given on the command line (`--submit-token-file`), else the file named by
 * ORCH_SUBMIT_TOKEN_FILE, else the value of ORCH_SUBMIT_TOKEN. Never Redis: whoever can write to
 * Redis must not be able to sign a submission. A file must be the caller's own and readable by
 * no one else. The token never appears in a message.
 */

import { randomBytes } from 'node:crypto';
import { UserInputError } from '../jobs/errors.ts';
import { MIN_SUBMIT_TOKEN_BYTES } from '../jobs/submit-signature.ts';
import { readPrivateFile } from './private-file.ts';

export const SUBMIT_TOKEN_ENV = 'ORCH_SUBMIT_TOKEN';
export const SUBMIT_TOKEN_FILE_ENV = 'ORCH_SUBMIT_TOKEN_FILE';

const HOW = `give orch serve and everyone who may submit the same submit token, distinct from the Redis password and the cluster secret: ${SUBMIT_TOKEN_FILE_ENV}=FILE (mode 0600, e.g. \`umask 077; openssl rand -hex 32 > FILE\`; orch submit --submit-token-file FILE) or ${SUBMIT_TOKEN_ENV}`;

/** A fresh random token (the embedded default makes one per run, held in its process). */
export function newSubmitToken(): Buffer {
  return randomBytes(32);
}

function readTokenFile(file: string): Buffer {
  return checked(
    readPrivateFile(file, { what: 'submit token', code: 'SUBMIT_TOKEN', hint: HOW }),
    `submit token file ${file}`,
  );
}

function checked(text: string, where: string): Buffer {
  const token = Buffer.from(text.trim(), 'utf8');
  if (token.length < MIN_SUBMIT_TOKEN_BYTES) {
    throw new UserInputError(
      'SUBMIT_TOKEN',
      `${where} holds ${token.length} bytes; a submit token needs at least ${MIN_SUBMIT_TOKEN_BYTES}`,
      { hint: HOW },
    );
  }
  return token;
}

/** The submit token from `file`, else the environment; a user error saying how to give one when none is configured. */
export function requireSubmitToken(who: string, file?: string, env: NodeJS.ProcessEnv = process.env): Buffer {
  if (file) return readTokenFile(file);
  const fromEnvFile = env[SUBMIT_TOKEN_FILE_ENV];
  if (fromEnvFile) return readTokenFile(fromEnvFile);
  const value = env[SUBMIT_TOKEN_ENV];
  if (value) return checked(value, SUBMIT_TOKEN_ENV);
  throw new UserInputError('SUBMIT_TOKEN', `${who} has no submit token to sign experiments with`, { hint: HOW });
}
