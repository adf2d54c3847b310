/**
 * A private OpenSSH server for tests: a temp dir with a generated host key and client key,
 * listening on a free loopback port, started as the current user (root in CI) with
 * `-D -e -f <temp sshd_config>`. The caller must `stop()` it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../store/redis-server-process.ts';

export interface SshdProcess {
  dir: string;
  port: number;
  user: string;
  /** a private key sshd accepts */
  clientKey: string;
  /** log lines sshd wrote so far (for assertion messages) */
  output(): string;
  stop(): Promise<void>;
}

export function sshdBinary(): string {
  for (const p of ['/usr/sbin/sshd', '/usr/bin/sshd']) if (existsSync(p)) return p;
  throw new Error('sshd not found: apt-get install -y openssh-server (.ci/run installs it)');
}

export function keygen(file: string): void {
  const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ssh-keygen failed: ${r.stderr}`);
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

export async function startSshd(timeoutMs = 15_000): Promise<SshdProcess> {
  const binary = sshdBinary();
  const dir = mkdtempSync(join(tmpdir(), 'orch-sshd-'));
  const port = await freePort();
  keygen(join(dir, 'host_key'));
  const clientKey = join(dir, 'client_key');
  keygen(clientKey);
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(`${clientKey}.pub`));
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host_key')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'UsePAM no',
      'StrictModes no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'PermitRootLogin prohibit-password',
      '',
    ].join('\n'),
  );
  mkdirSync('/run/sshd', { recursive: true }); // the privilege separation directory sshd requires
  let out = '';
  const child: ChildProcess = spawn(binary, ['-D', '-e', '-f', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + timeoutMs;
  while (!(await portOpen(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`sshd did not start listening on 127.0.0.1:${port}: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { dir, port, user: userInfo().username, clientKey, output: () => out, stop };
}
