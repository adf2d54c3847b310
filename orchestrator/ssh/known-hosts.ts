/**
 * Host key trust, as OpenSSH decides it: a host's key is trusted when ~/.ssh/known_hosts (plain
 * or hashed `|1|salt|hash` names, wildcards, `[host]:port` for a port other than 22) or the
 * cluster file's `host_key` lists it. A host with no known key of the presented type is
 * unknown; one whose known key of that type differs has changed (possible man-in-the-middle),
 * and a key marked @revoked is refused outright. Fingerprints are printed as OpenSSH prints
 * them: `SHA256:` and the base64 of the key blob's sha256 without padding.
 */
import { createHash, createHmac } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname } from 'node:path';

export type HostKeyVerdict =
  | { status: 'trusted'; fingerprint: string; type: string }
  | { status: 'unknown'; fingerprint: string; type: string }
  | {
      status: 'changed' | 'revoked';
      fingerprint: string;
      type: string /** where the other key is listed: `file:line` or `host_key` */;
      known: string[];
    };

export interface KnownKey {
  type: string;
  /** base64 of the key blob */
  key: string;
  /** `file:line`, or `host_key` for the cluster file's entry */
  where: string;
  revoked: boolean;
}

export function defaultKnownHostsFiles(): string[] {
  return [`${homedir()}/.ssh/known_hosts`, `${homedir()}/.ssh/known_hosts2`];
}

/** The name known_hosts lists a host under: `host`, or `[host]:port` off port 22. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

export function fingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** The key type a blob names in its first field (`ssh-ed25519`, `ssh-rsa`, …). */
export function blobType(blob: Buffer): string {
  if (blob.length < 4) return '';
  const n = blob.readUInt32BE(0);
  return blob.subarray(4, 4 + n).toString('latin1');
}

function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    'i',
  );
  return re.test(name);
}

/** Whether a known_hosts host field (comma separated patterns, `!` negations, or one hashed name) names `name`. */
export function hostFieldMatches(field: string, name: string): boolean {
  if (field.startsWith('|1|')) {
    const [, , salt, hash] = field.split('|');
    if (!salt || !hash) return false;
    return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash;
  }
  let matched = false;
  for (const p of field.split(',')) {
    if (p.startsWith('!')) {
      if (globMatch(p.slice(1), name)) return false;
    } else if (globMatch(p, name)) {
      matched = true;
    }
  }
  return matched;
}

/** The keys `files` list for `name`; a file that does not exist lists none. */
export function knownKeys(files: string[], name: string): KnownKey[] {
  const out: KnownKey[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    text.split('\n').forEach((raw, i) => {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) return;
      const fields = line.split(/\s+/);
      let revoked = false;
      if (fields[0]?.startsWith('@')) {
        // certificate authorities are not supported: such a line trusts no key by itself
        if (fields[0] !== '@revoked') return;
        revoked = true;
        fields.shift();
      }
      const [hosts, type, key] = fields;
      if (!hosts || !type || !key || !hostFieldMatches(hosts, name)) return;
      out.push({ type, key, where: `${file}:${i + 1}`, revoked });
    });
  }
  return out;
}

/** The cluster file's `host_key` as a known key. */
export function clusterHostKey(line: string | undefined): KnownKey[] {
  if (!line) return [];
  const [type, key] = line.trim().split(/\s+/);
  return type && key ? [{ type, key, where: 'host_key', revoked: false }] : [];
}

/** ssh-rsa keys are offered under the rsa-sha2 signature names too. */
function sameType(a: string, b: string): boolean {
  const norm = (t: string) => (t.startsWith('rsa-sha2-') ? 'ssh-rsa' : t);
  return norm(a) === norm(b);
}

export function verifyHostKey(blob: Buffer, known: KnownKey[]): HostKeyVerdict {
  const type = blobType(blob);
  const fp = fingerprint(blob);
  const b64 = blob.toString('base64');
  const matching = known.filter((k) => k.key === b64);
  if (matching.some((k) => k.revoked))
    return { status: 'revoked', fingerprint: fp, type, known: matching.map((k) => k.where) };
  if (matching.length > 0) return { status: 'trusted', fingerprint: fp, type };
  const others = known.filter((k) => !k.revoked && sameType(k.type, type));
  if (others.length > 0) return { status: 'changed', fingerprint: fp, type, known: others.map((k) => k.where) };
  return { status: 'unknown', fingerprint: fp, type };
}

/**
 * Host key algorithms with the types already known for the host first, so a host with an
 * ed25519 and an rsa key presents the one known_hosts has (as OpenSSH orders them).
 */
export function preferredHostKeyAlgorithms(known: KnownKey[]): string[] {
  const all = [
    'ssh-ed25519',
    'ecdsa-sha2-nistp256',
    'ecdsa-sha2-nistp384',
    'ecdsa-sha2-nistp521',
    'rsa-sha2-512',
    'rsa-sha2-256',
    'ssh-rsa',
  ];
  const knownTypes = new Set(known.filter((k) => !k.revoked).map((k) => k.type));
  const first = all.filter((a) => [...knownTypes].some((t) => sameType(t, a)));
  return [...first, ...all.filter((a) => !first.includes(a))];
}

/** Appends `name type key` to `file` (creating ~/.ssh with mode 0700 and the file with 0600). */
export function appendKnownHost(file: string, name: string, blob: Buffer): string {
  const line = `${name} ${blobType(blob)} ${blob.toString('base64')}`;
  const dir = dirname(file);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  let sep = '';
  try {
    const prev = readFileSync(file, 'utf8');
    if (prev.length > 0 && !prev.endsWith('\n')) sep = '\n';
  } catch {
    // a new file
  }
  appendFileSync(file, `${sep}${line}\n`, { mode: 0o600 });
  return line;
}
