/**
 * One SSH connection to a cluster host (ssh2), made as `ssh HOST` would (ssh-target.ts: the
 * cluster file, then ~/.ssh/config, ProxyJump hops tunnelled through the previous hop's
 * forwardOut), trusting only host keys known_hosts or the cluster file's host_key lists
 * (known-hosts.ts): run commands, stream their output lines to a logger bound to the host.
 * Connection problems the user can fix (missing key, refused auth, unknown or changed host key,
 * unreachable host) are UserInputErrors that name the cluster file entry (`hosts[i].ssh…`) and
 * the fix.
 */
import { readFileSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import ssh2, { type AgentAuthMethod, Client, type PublicKeyAuthMethod } from 'ssh2';
import type { Host } from '../../jobs/cluster.ts';
import { UserInputError } from '../../jobs/errors.ts';
import { redactText } from '../../jobs/redact.ts';
import {
  clusterHostKey,
  type HostKeyVerdict,
  knownHostsName,
  knownKeys,
  preferredHostKeyAlgorithms,
  verifyHostKey,
} from './known-hosts.ts';
import { describeTarget, resolveTarget, type SshTarget } from './ssh-target.ts';

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

/** A host key presented on the way to a host (a ProxyJump hop's, or the host's own: `final`). */
export interface HostKeyEvent {
  target: SshTarget;
  /** the name known_hosts lists it under: `host` or `[host]:port` */
  name: string;
  verdict: HostKeyVerdict;
  blob: Buffer;
  final: boolean;
}

/** Whether to go on with a presented key; the default trusts only a `trusted` verdict. */
export type HostKeyDecider = (e: HostKeyEvent) => Promise<boolean>;

const trustedOnly: HostKeyDecider = async (e) => e.verdict.status === 'trusted';

type SshError = Error & { level?: string; code?: string };

function keyRefusal(ref: HostRef, e: HostKeyEvent): UserInputError {
  const at = `${ref.file} hosts[${ref.index}].ssh`;
  const { verdict: v, target: t } = e;
  const trust = `orch hosts trust ${ref.file} ${ref.host.name}`;
  const hop = e.final ? '' : ` (the ProxyJump hop on the way to ${ref.host.name})`;
  if (v.status === 'changed' || v.status === 'revoked') {
    return new UserInputError(
      'SSH_HOST_KEY_CHANGED',
      `${at}: WARNING: POSSIBLE MAN-IN-THE-MIDDLE: ${e.name}${hop} presented the ${v.type} key ${v.fingerprint}, ` +
        `${v.status === 'revoked' ? 'which is marked @revoked' : 'not the one known for it'} (${v.known.join(', ')}); refused, and orch never trusts such a key by itself`,
      {
        hint:
          `ask the host's administrator whether its key changed (ssh-keygen -lf /etc/ssh/ssh_host_${v.type.replace(/^ssh-|-sha2-nistp\d+$/g, '')}_key.pub on it prints the fingerprint); ` +
          `only if it did, remove the old entry (ssh-keygen -R '${e.name}'${v.known.includes('host_key') ? `, or fix ${at}.host_key` : ''}) and run ${trust}`,
      },
    );
  }
  return new UserInputError(
    'SSH_HOST_UNKNOWN',
    `${at}: the host key of ${e.name}${hop} is not known: ${v.type} ${v.fingerprint}; orch connects only to hosts whose key is trusted`,
    {
      hint:
        `check the fingerprint with the host's administrator, then trust it: ${trust} ` +
        `(or ssh-keyscan -p ${t.port} ${t.hostName} >> ~/.ssh/known_hosts, or set ${at}.host_key)`,
    },
  );
}

/** The private keys to offer, read now: a cluster file's key_file that cannot be used is an error, a config IdentityFile that cannot is skipped (as ssh does). */
function loadKeys(ref: HostRef, t: SshTarget, hop: boolean): Buffer[] {
  const at = `${ref.file} hosts[${ref.index}].ssh`;
  const keys: Buffer[] = [];
  for (const file of t.identityFiles) {
    let key: Buffer;
    try {
      key = readFileSync(file);
    } catch (err) {
      if (!t.explicitKey) continue;
      throw new UserInputError(
        'SSH_KEY_MISSING',
        `${at}.key_file: cannot read ${ref.host.ssh.key_file} (${(err as NodeJS.ErrnoException).code ?? err})`,
        {
          hint: `fix ${at}.key_file to the private key authorized for ${describeTarget(t)} (e.g. ssh-keygen -t ed25519 -f ${ref.host.ssh.key_file}, then ssh-copy-id)`,
          cause: err,
        },
      );
    }
    const parsed = ssh2.utils.parseKey(key);
    if (parsed instanceof Error || (Array.isArray(parsed) ? parsed[0] : parsed)?.isPrivateKey() !== true) {
      if (!t.explicitKey) continue;
      throw new UserInputError(
        'SSH_KEY_INVALID',
        `${at}.key_file: ${ref.host.ssh.key_file} is not a usable private key (${parsed instanceof Error ? parsed.message : 'not a private key'})`,
        {
          hint: `point ${at}.key_file at an unencrypted OpenSSH private key (not the .pub file)`,
        },
      );
    }
    keys.push(key);
  }
  if (keys.length === 0 && t.agent === undefined) {
    throw new UserInputError(
      'SSH_KEY_MISSING',
      `${at}: no key to offer ${describeTarget(t)}${hop ? ' (a ProxyJump hop)' : ''}: no key_file, no usable IdentityFile in ~/.ssh/config, no ~/.ssh/id_ed25519, id_ecdsa or id_rsa, and no ssh-agent (SSH_AUTH_SOCK)`,
      {
        hint: `set ${at}.key_file, an IdentityFile for ${t.alias} in ~/.ssh/config, or start ssh-agent and ssh-add the key`,
      },
    );
  }
  return keys;
}

/**
 * Opens one hop: verifies its host key through `decide`, authenticates with the agent and the
 * keys (unless `probe`: then it stops after the key was decided and resolves null).
 */
function openHop(
  ref: HostRef,
  t: SshTarget,
  sock: Duplex | undefined,
  o: { final: boolean; decide: HostKeyDecider; probe: boolean; readyTimeoutMs: number },
): Promise<Client | null> {
  const at = `${ref.file} hosts[${ref.index}].ssh`;
  const name = knownHostsName(t.hostName, t.port);
  const known = [...knownKeys(t.knownHostsFiles, name), ...(o.final ? clusterHostKey(t.hostKey) : [])];
  const keys = o.probe && o.final ? [] : loadKeys(ref, t, !o.final);
  const client = new Client();
  let refused: UserInputError | undefined;
  let probed = false;
  return new Promise<Client | null>((resolve, reject) => {
    client.once('ready', () => resolve(client));
    client.once('error', (err: SshError) => {
      client.end();
      if (probed) return resolve(null);
      if (refused) return reject(refused);
      const where = describeTarget({ ...t, jump: [] });
      if (err.level === 'client-authentication') {
        reject(
          new UserInputError(
            'SSH_AUTH_FAILED',
            `${at}: ${where}${o.final ? '' : ' (a ProxyJump hop)'} refused the key${t.identityFiles.length > 1 ? 's' : ''} ${t.identityFiles.join(', ') || '(none)'}${t.agent ? ' and those of ssh-agent' : ''}`,
            {
              hint: `add the public key of ${at}.key_file to ~${t.user}/.ssh/authorized_keys on ${t.hostName}, or fix ${at}.user / ${at}.key_file (or User / IdentityFile of ${t.alias} in ~/.ssh/config)`,
              cause: err,
            },
          ),
        );
      } else if (
        err.level === 'client-socket' ||
        err.level === 'client-timeout' ||
        err.level === 'client-dns' ||
        err.code !== undefined
      ) {
        reject(
          new UserInputError(
            'SSH_UNREACHABLE',
            `${at}: cannot reach ${where}${o.final ? '' : ' (a ProxyJump hop)'} (${err.code ?? err.level}: ${err.message})`,
            {
              hint: `check ${at}.host and ${at}.port (and HostName, Port, ProxyJump of ${t.alias} in ~/.ssh/config), and that sshd runs there and is reachable from this machine`,
              cause: err,
            },
          ),
        );
      } else {
        reject(err);
      }
    });
    const auths: (AgentAuthMethod | PublicKeyAuthMethod)[] = [
      ...(t.agent ? [{ type: 'agent' as const, username: t.user, agent: t.agent }] : []),
      ...keys.map((key) => ({ type: 'publickey' as const, username: t.user, key })),
    ];
    client.connect({
      ...(sock ? { sock } : { host: t.hostName, port: t.port }),
      username: t.user,
      authHandler: auths,
      readyTimeout: o.readyTimeoutMs,
      algorithms: { serverHostKey: preferredHostKeyAlgorithms(known) as never },
      hostVerifier: (blob: Buffer, verify: (ok: boolean) => void) => {
        const e: HostKeyEvent = { target: t, name, verdict: verifyHostKey(blob, known), blob, final: o.final };
        void o.decide(e).then(
          (ok) => {
            if (!ok) refused = keyRefusal(ref, e);
            // a probe ends at the host's key: no login
            if (o.final && o.probe) {
              probed = ok;
              return verify(false);
            }
            verify(ok);
          },
          (err: unknown) => {
            refused = err instanceof UserInputError ? err : keyRefusal(ref, e);
            verify(false);
          },
        );
      },
    });
  });
}

function forwardOut(client: Client, host: string, port: number): Promise<Duplex> {
  return new Promise((resolve, reject) =>
    client.forwardOut('127.0.0.1', 0, host, port, (err, stream) => (err ? reject(err) : resolve(stream))),
  );
}

/** Opens every hop of `target`'s chain, each through the previous one's forwardOut; the last client is the host's. */
async function openChain(
  ref: HostRef,
  o: { decide: HostKeyDecider; probe: boolean; readyTimeoutMs: number },
): Promise<Client[]> {
  const target = resolveTarget(ref.host);
  const hops = [...target.jump, target];
  const clients: Client[] = [];
  let sock: Duplex | undefined;
  try {
    for (const [i, hop] of hops.entries()) {
      const final = i === hops.length - 1;
      const c = await openHop(ref, hop, sock, { ...o, final });
      if (!c) break;
      clients.push(c);
      if (!final) {
        const next = hops[i + 1]!;
        sock = await forwardOut(c, next.hostName, next.port).catch((err: Error) => {
          throw new UserInputError(
            'SSH_UNREACHABLE',
            `${ref.file} hosts[${ref.index}].ssh: the ProxyJump hop ${describeTarget({ ...hop, jump: [] })} cannot reach ${next.hostName}:${next.port} (${err.message})`,
            {
              hint: `check HostName and Port of ${next.alias}, as seen from ${hop.hostName}, and that the hop's sshd allows TCP forwarding`,
              cause: err,
            },
          );
        });
      }
    }
  } catch (err) {
    for (const c of clients.reverse()) c.end();
    throw err;
  }
  return clients;
}

export class SshHost {
  private constructor(
    /** the hops' clients, the host's last */
    private readonly clients: Client[],
    readonly log: Logger,
  ) {}

  private get client(): Client {
    return this.clients[this.clients.length - 1]!;
  }

  static async connect(
    ref: HostRef,
    log: Logger,
    opts: { readyTimeoutMs?: number; decide?: HostKeyDecider } = {},
  ): Promise<SshHost> {
    const clients = await openChain(ref, {
      decide: opts.decide ?? trustedOnly,
      probe: false,
      readyTimeoutMs: opts.readyTimeoutMs ?? 15_000,
    });
    return new SshHost(clients, log.child({ host: ref.host.name }));
  }

  /**
   * Goes as far as the host's key, without logging in to the host: `decide` sees every hop's
   * key (a hop must be trusted, or trusted by `decide`, to go on) and the host's.
   */
  static async probeHostKey(
    ref: HostRef,
    decide: HostKeyDecider,
    opts: { readyTimeoutMs?: number } = {},
  ): Promise<void> {
    const clients = await openChain(ref, { decide, probe: true, readyTimeoutMs: opts.readyTimeoutMs ?? 15_000 });
    for (const c of clients.reverse()) c.end();
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
    for (const c of [...this.clients].reverse()) c.end();
  }
}
