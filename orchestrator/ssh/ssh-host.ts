/**
 * One SSH connection to a cluster host (ssh2): connect with the cluster file's key, run
 * commands, stream their output lines to a logger bound to the host. Connection problems the
 * user can fix (missing key, refused auth, unreachable host) are UserInputErrors that name the
 * cluster file entry (`hosts[i].ssh…`) and the fix.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import type { Logger } from 'pino';
import { Client } from 'ssh2';
import type { Host } from '../../jobs/cluster.ts';
import { UserInputError } from '../../jobs/errors.ts';
import { redactText } from '../../store/redact.ts';

export interface ExecResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** Where a host sits in its cluster file, for messages: `cluster.yaml hosts[1]`. */
export interface HostRef {
  file: string;
  index: number;
  host: Host;
}

const expandHome = (p: string): string => (p === '~' || p.startsWith('~/') ? homedir() + p.slice(1) : p);

export class SshHost {
  private constructor(
    private readonly client: Client,
    readonly log: Logger,
  ) {}

  static async connect(ref: HostRef, log: Logger, opts: { readyTimeoutMs?: number } = {}): Promise<SshHost> {
    const { file, index, host } = ref;
    const at = `${file} hosts[${index}].ssh`;
    const target = `${host.ssh.user}@${host.ssh.host}:${host.ssh.port}`;
    let privateKey: Buffer;
    try {
      privateKey = readFileSync(expandHome(host.ssh.key_file));
    } catch (err) {
      throw new UserInputError('SSH_KEY_MISSING', `${at}.key_file: cannot read ${host.ssh.key_file} (${(err as NodeJS.ErrnoException).code ?? err})`, {
        hint: `fix ${at}.key_file to the private key authorized for ${target} (e.g. ssh-keygen -t ed25519 -f ${host.ssh.key_file}, then ssh-copy-id)`,
        cause: err,
      });
    }
    const client = new Client();
    await new Promise<void>((resolve, reject) => {
      client.once('ready', () => resolve());
      client.once('error', (err: Error & { level?: string; code?: string }) => {
        client.end();
        if (err.level === 'client-authentication') {
          reject(
            new UserInputError('SSH_AUTH_FAILED', `${at}: ${target} refused the key ${host.ssh.key_file}`, {
              hint: `add the public key of ${at}.key_file to ~${host.ssh.user}/.ssh/authorized_keys on ${host.ssh.host}, or fix ${at}.user / ${at}.key_file`,
              cause: err,
            }),
          );
        } else if (err.level === 'client-socket' || err.level === 'client-timeout' || err.level === 'client-dns' || err.code !== undefined) {
          reject(
            new UserInputError('SSH_UNREACHABLE', `${at}: cannot reach ${target} (${err.code ?? err.level}: ${err.message})`, {
              hint: `check ${at}.host and ${at}.port, and that sshd runs there and is reachable from this machine`,
              cause: err,
            }),
          );
        } else {
          reject(err);
        }
      });
      try {
        client.connect({
          host: host.ssh.host,
          port: host.ssh.port,
          username: host.ssh.user,
          privateKey,
          readyTimeout: opts.readyTimeoutMs ?? 15_000,
        });
      } catch (err) {
        // ssh2 throws synchronously on a key it cannot parse
        reject(
          new UserInputError('SSH_KEY_INVALID', `${at}.key_file: ${host.ssh.key_file} is not a usable private key (${(err as Error).message})`, {
            hint: `point ${at}.key_file at an unencrypted OpenSSH private key (not the .pub file)`,
            cause: err,
          }),
        );
      }
    });
    return new SshHost(client, log.child({ host: host.name }));
  }

  /** Runs `command` through the remote login shell, `stdin` on its input; every output line is logged at debug. */
  exec(command: string, opts: { timeoutMs?: number; stdin?: string } = {}): Promise<ExecResult> {
    const timeoutMs = opts.timeoutMs ?? 30_000;
    return new Promise((resolve, reject) => {
      this.client.exec(command, (err, stream) => {
        if (err) return reject(err);
        const out = { stdout: '', stderr: '' };
        const pipe = (which: 'stdout' | 'stderr') => {
          let partial = '';
          return (chunk: Buffer) => {
            out[which] += chunk.toString('utf8');
            const lines = (partial + chunk.toString('utf8')).split('\n');
            partial = lines.pop() ?? '';
            for (const line of lines) this.log.debug({ stream: which }, line);
          };
        };
        const timer = setTimeout(() => {
          stream.close();
          reject(new Error(`ssh exec timed out after ${timeoutMs} ms: ${redactText(command)}`));
        }, timeoutMs);
        // stdin carries what must not be in the command line (the remote `ps` shows that)
        stream.end(opts.stdin ?? '');
        stream.on('data', pipe('stdout'));
        stream.stderr.on('data', pipe('stderr'));
        stream.on('close', (code: number | null, signal: string | null) => {
          clearTimeout(timer);
          this.log.debug({ code, signal }, 'exec done');
          resolve({ code: code ?? null, signal: signal ?? null, ...out });
        });
      });
    });
  }

  close(): void {
    this.client.end();
  }
}
