/**
 * Suites that need a service this machine may lack: sshd (test/ssh), a Slurm (test/slurm, started
 * by .ci/slurm-up), PostgreSQL at 127.0.0.1:5432 (the history tests' second backend), Debian's
 * chromium (the dashboard's browser tests) and Debian's python3-torch (examples/torch-tp as a gang). Without the service the suite skips with the reason
 * README.md's "Tests" section lists for it, so `npm test` passes on README's prerequisites alone.
 * ORCH_REQUIRE_SUITES (comma-separated names, or `all`; .ci/run sets every one) turns that skip
 * into a failure of the test file: CI, which has every service, cannot pass with a suite skipped.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const REQUIRE_SUITES_ENV = 'ORCH_REQUIRE_SUITES';
export const SUITE_NAMES = ['ssh', 'slurm', 'postgres', 'chromium', 'torch'] as const;
export type SuiteName = (typeof SUITE_NAMES)[number];

/** Whether ORCH_REQUIRE_SUITES names `suite` (or `all`). */
export function suiteRequired(suite: SuiteName, env: NodeJS.ProcessEnv = process.env): boolean {
  const names = (env[REQUIRE_SUITES_ENV] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return names.includes('all') || names.includes(suite);
}

/**
 * The skip reason of `suite` when its service is `missing` (a sentence, or null when present):
 * false to run it. Throws when ORCH_REQUIRE_SUITES requires the suite, failing the file.
 */
export function suiteSkip(
  suite: SuiteName,
  missing: string | null,
  env: NodeJS.ProcessEnv = process.env,
): string | false {
  if (missing === null) return false;
  const reason = `${suite} suite skipped: ${missing}`;
  if (suiteRequired(suite, env)) {
    throw new Error(
      `${reason} — but ${REQUIRE_SUITES_ENV}=${env[REQUIRE_SUITES_ENV]} requires it: start the service (.ci/run does), or drop "${suite}" from ${REQUIRE_SUITES_ENV}`,
    );
  }
  return reason;
}

/** Why the ssh suite cannot run here: no sshd or ssh-keygen binary (Debian: openssh-server). */
export function sshdMissing(): string | null {
  if (!['/usr/sbin/sshd', '/usr/bin/sshd'].some((p) => existsSync(p)))
    return 'no sshd (apt-get install -y openssh-server)';
  if (spawnSync('ssh-keygen', ['-?'], { stdio: 'ignore' }).error)
    return 'no ssh-keygen (apt-get install -y openssh-client)';
  return null;
}

/** Why the PostgreSQL backend cannot run here: nothing answers on `url`'s host and port within 3 s. */
export function postgresMissing(url: string): string | null {
  const { hostname, port } = new URL(url);
  const probe =
    "const s=require('net').connect(+process.argv[2],process.argv[1]);s.on('connect',()=>process.exit(0));s.on('error',()=>process.exit(1))";
  const r = spawnSync(process.execPath, ['-e', probe, hostname, port || '5432'], { stdio: 'ignore', timeout: 3000 });
  return r.status === 0
    ? null
    : `no PostgreSQL answers at ${hostname}:${port || '5432'} (apt-get install -y postgresql; .ci/run starts it)`;
}

/** Why the torch suite cannot run here: Debian's torch (CPU, gloo) does not import in /usr/bin/python3. */
export function torchMissing(): string | null {
  const r = spawnSync('/usr/bin/python3', ['-c', 'import torch, torch.distributed'], {
    stdio: 'ignore',
    timeout: 60_000,
  });
  return r.status === 0 ? null : 'no torch in /usr/bin/python3 (apt-get install -y python3-torch)';
}
