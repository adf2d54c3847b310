/**
 * Where a scheduler or a worker finds the cluster secret that signs and verifies host jobs
 * (jobs/grant.ts): a file given on the command line (`--secret-file`), else the file named by
 * ORCH_CLUSTER_SECRET_FILE, else the value of ORCH_CLUSTER_SECRET. Never Redis: whoever can write
 * to Redis must not be able to forge a grant. A file must be the caller's own and readable by
 * no one else, like the Redis URL file. The secret itself never appears in a message.
 */

import { UserInputError } from '../jobs/errors.ts';
import { MIN_SECRET_BYTES } from '../jobs/grant.ts';
import { readPrivateFile } from './private-file.ts';

export const SECRET_ENV = 'ORCH_CLUSTER_SECRET';
export const SECRET_FILE_ENV = 'ORCH_CLUSTER_SECRET_FILE';

const HOW = `give every scheduler and worker of the cluster the same secret: --secret-file FILE (mode 0600, e.g. \`umask 077; openssl rand -hex 32 > FILE\`) or ${SECRET_ENV}`;

/** The secret of `file`, refusing a file others may read or that belongs to someone else. */
export function readSecretFile(file: string): Buffer {
  return checked(
    readPrivateFile(file, { what: 'cluster secret', code: 'CLUSTER_SECRET', hint: HOW }),
    `cluster secret file ${file}`,
  );
}

/** The cluster secret from `file`, else the environment; null when none is configured. */
export function findClusterSecret(file?: string, env: NodeJS.ProcessEnv = process.env): Buffer | null {
  if (file) return readSecretFile(file);
  const fromEnvFile = env[SECRET_FILE_ENV];
  if (fromEnvFile) return readSecretFile(fromEnvFile);
  const value = env[SECRET_ENV];
  if (value) return checked(value, SECRET_ENV);
  return null;
}

/** Like findClusterSecret, but a missing secret is a user error saying how to give one. */
export function requireClusterSecret(who: string, file?: string, env: NodeJS.ProcessEnv = process.env): Buffer {
  const secret = findClusterSecret(file, env);
  if (!secret)
    throw new UserInputError('CLUSTER_SECRET', `${who} has no cluster secret to sign and verify block jobs with`, {
      hint: HOW,
    });
  return secret;
}

function checked(text: string, where: string): Buffer {
  const secret = Buffer.from(text.trim(), 'utf8');
  if (secret.length < MIN_SECRET_BYTES) {
    throw new UserInputError(
      'CLUSTER_SECRET',
      `${where} holds ${secret.length} bytes; a cluster secret needs at least ${MIN_SECRET_BYTES}`,
      { hint: HOW },
    );
  }
  return secret;
}
