/**
 * Where and as whom to connect for one cluster host, as `ssh HOST` would: the cluster file's
 * ssh entry first, then ~/.ssh/config for what it leaves out (HostName of an alias, User, Port,
 * IdentityFile, ProxyJump, UserKnownHostsFile, IdentitiesOnly), then ssh's defaults (the local
 * user, port 22, ~/.ssh/id_ed25519, id_ecdsa, id_rsa). A ProxyJump hop is resolved the same
 * way, so a jump host may itself be an alias with its own user, key and jump.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import SSHConfig from 'ssh-config';
import type { Host } from '../../jobs/cluster.ts';
import { UserInputError } from '../../jobs/errors.ts';
import { messageOf } from '../../jobs/message-of.ts';
import { defaultKnownHostsFiles } from './known-hosts.ts';

export interface SshTarget {
  /** the name asked for: the cluster file's ssh.host or a ProxyJump hop (maybe an alias) */
  alias: string;
  /** the address connected to (the alias's HostName, else the alias) */
  hostName: string;
  port: number;
  user: string;
  /** private key files to offer, in order; `explicit` when the cluster file named the one */
  identityFiles: string[];
  explicitKey: boolean;
  /** offer ssh-agent's keys too (SSH_AUTH_SOCK set and IdentitiesOnly not yes) */
  agent: string | undefined;
  /** the cluster file's host_key, trusted besides known_hosts */
  hostKey: string | undefined;
  knownHostsFiles: string[];
  /** the hops to go through first, the first hop first */
  jump: SshTarget[];
}

export function sshConfigPath(): string {
  return `${homedir()}/.ssh/config`;
}

const expandHome = (p: string): string => (p === '~' || p.startsWith('~/') ? homedir() + p.slice(1) : p);

function readConfig(): SSHConfig {
  const file = sshConfigPath();
  if (!existsSync(file)) return SSHConfig.parse('');
  try {
    return SSHConfig.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UserInputError('SSH_CONFIG_INVALID', `${file}: cannot be read or parsed (${messageOf(err)})`, {
      hint: `fix ${file} (ssh -G HOST shows what ssh makes of it)`,
      cause: err,
    });
  }
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);
const all = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** `%d %u %h %r %p %%` and a leading `~`, as ssh expands them in IdentityFile and UserKnownHostsFile. */
function tokens(s: string, t: { host: string; user: string; port: number }): string {
  const map: Record<string, string> = {
    d: homedir(),
    u: userInfo().username,
    h: t.host,
    r: t.user,
    p: String(t.port),
    '%': '%',
  };
  return expandHome(s.replace(/%([duhrp%])/g, (_, c: string) => map[c] ?? ''));
}

/** One hop of a ProxyJump value: `[user@]host[:port]` (or `ssh://user@host:port`). */
function parseHop(hop: string): { user?: string; host: string; port?: number } {
  const m = /^(?:ssh:\/\/)?(?:([^@]+)@)?(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(hop.trim());
  if (!m?.[2])
    throw new UserInputError('SSH_CONFIG_INVALID', `ProxyJump ${hop}: expected [user@]host[:port]`, {
      hint: `fix the ProxyJump line in ${sshConfigPath()}`,
    });
  return {
    ...(m[1] ? { user: m[1] } : {}),
    host: m[2].replace(/^\[|\]$/g, ''),
    ...(m[3] ? { port: Number(m[3]) } : {}),
  };
}

function resolve(
  config: SSHConfig,
  alias: string,
  given: { port?: number; user?: string; key_file?: string; host_key?: string },
  depth: number,
): SshTarget {
  if (depth > 8)
    throw new UserInputError('SSH_CONFIG_INVALID', `ProxyJump of ${alias}: more than 8 hops (a loop?)`, {
      hint: `fix the ProxyJump lines in ${sshConfigPath()}`,
    });
  const c = config.compute(alias);
  const hostName = first(c.HostName) ?? alias;
  const user = given.user ?? first(c.User) ?? userInfo().username;
  const port = given.port ?? (first(c.Port) ? Number(first(c.Port)) : 22);
  const t = { host: hostName, user, port };
  const fromConfig = all(c.IdentityFile).map((f) => tokens(f, t));
  const defaults = ['id_ed25519', 'id_ecdsa', 'id_rsa']
    .map((n) => `${homedir()}/.ssh/${n}`)
    .filter((f) => existsSync(f));
  const identityFiles = given.key_file
    ? [expandHome(given.key_file)]
    : fromConfig.length > 0
      ? fromConfig.filter((f) => existsSync(f))
      : defaults;
  const identitiesOnly = first(c.IdentitiesOnly)?.toLowerCase() === 'yes';
  const knownHosts = all(c.UserKnownHostsFile)
    .flatMap((v) => v.split(/\s+/))
    .filter(Boolean)
    .map((f) => tokens(f, t));
  const proxy = first(c.ProxyJump);
  const jump: SshTarget[] = [];
  if (proxy && proxy.toLowerCase() !== 'none') {
    for (const hop of proxy.split(',')) {
      const h = parseHop(hop);
      const target = resolve(
        config,
        h.host,
        { ...(h.user ? { user: h.user } : {}), ...(h.port ? { port: h.port } : {}) },
        depth + 1,
      );
      jump.push(...target.jump, { ...target, jump: [] });
    }
  }
  return {
    alias,
    hostName,
    port,
    user,
    identityFiles,
    explicitKey: given.key_file !== undefined,
    agent: identitiesOnly ? undefined : process.env.SSH_AUTH_SOCK || undefined,
    hostKey: given.host_key,
    knownHostsFiles: knownHosts.length > 0 ? knownHosts : defaultKnownHostsFiles(),
    jump,
  };
}

export function resolveTarget(host: Host): SshTarget {
  return resolve(readConfig(), host.ssh.host, host.ssh, 0);
}

/** `user@host:port`, with ` via user@jump:port` for each hop. */
export function describeTarget(t: SshTarget): string {
  const one = (x: SshTarget) => `${x.user}@${x.hostName}:${x.port}`;
  return `${one(t)}${t.alias !== t.hostName ? ` (${t.alias})` : ''}${t.jump.map((j) => ` via ${one(j)}`).join('')}`;
}
