/**
 * A private OpenSSH server for tests: a temp dir with a generated host key and client key,
 * listening on a free loopback port, started as the current user (root in CI) with
 * `-D -e -f <temp sshd_config>`. `restart({ newHostKey: true })` brings it back on the same
 * port with another host key (what a reinstalled host, or a man in the middle, presents).
 * The caller must `stop()` it.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
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
  /** its host key as known_hosts and a cluster file's host_key write it: `ssh-ed25519 AAAA…` */
  hostKeyLine(): string;
  /** stops sshd and starts it again on the same port, with a fresh host key if asked */
  restart(opts?: { newHostKey?: boolean }): Promise<void>;
  /** log lines sshd wrote so far (for assertion messages) */
  output(): string;
  stop(): Promise<void>;
}

/** The environment `orch hosts up` takes the cluster secret from, which it hands to the workers. */
export const SECRET_ENV: Record<string, string> = { ORCH_CLUSTER_SECRET: randomBytes(32).toString('hex') };

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
      'AllowTcpForwarding yes',
      '',
    ].join('\n'),
  );
  mkdirSync('/run/sshd', { recursive: true }); // the privilege separation directory sshd requires
  let out = '';
  let child: ChildProcess;
  let exited: Promise<void>;
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
  };
  const launch = async () => {
    child = spawn(binary, ['-D', '-e', '-f', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + timeoutMs;
    while (!(await portOpen(port))) {
      if (child.exitCode !== null || Date.now() > deadline) {
        await kill();
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`sshd did not start listening on 127.0.0.1:${port}: ${out}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const stop = async () => {
    await kill();
    rmSync(dir, { recursive: true, force: true });
  };
  const restart = async (opts: { newHostKey?: boolean } = {}) => {
    await kill();
    // the old sshd closed its socket at exit; wait until nothing answers before starting again
    while (await portOpen(port)) await new Promise((r) => setTimeout(r, 100));
    if (opts.newHostKey) {
      rmSync(join(dir, 'host_key'), { force: true });
      rmSync(join(dir, 'host_key.pub'), { force: true });
      keygen(join(dir, 'host_key'));
    }
    await launch();
  };
  const hostKeyLine = () => readFileSync(join(dir, 'host_key.pub'), 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');
  await launch();
  return { dir, port, user: userInfo().username, clientKey, output: () => out, stop, restart, hostKeyLine };
}
