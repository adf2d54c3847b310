/**
 * The names the dashboard answers to. A page of another site can make a browser send requests to
 * 127.0.0.1 under its own name (DNS rebinding: attacker.example resolving to 127.0.0.1), and the
 * browser then treats the answers as that site's. The Host header names the site the browser
 * thinks it talks to, so a request whose Host is not one of the dashboard's own names is refused
 * (421) before any route reads anything.
 *
 * Its names: the bound address; on loopback, localhost, 127.0.0.1 and [::1]; on a wildcard
 * address, the host's name and every address of its interfaces too; and the names passed with
 * --allow-host (a reverse proxy's or a DNS name). Each with the listening port (no port: 80).
 */

import { isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { UserInputError } from '../../jobs/errors.ts';
import { isLoopback } from './auth.ts';

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
/** A DNS name or an IPv4 address: letters, digits, dots and dashes. */
const NAME = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;

/** `[::1]` for an IPv6 address, the name lower-cased otherwise. */
function asHostName(host: string): string {
  return isIP(host) === 6 ? `[${host.toLowerCase()}]` : host.toLowerCase();
}

/** Checks one --allow-host value: a name or an address, without scheme, port or path. */
export function parseAllowedHost(value: string): string {
  const v = value.trim().toLowerCase();
  if (isIP(v.replace(/^\[|\]$/g, '')) === 6) return asHostName(v.replace(/^\[|\]$/g, ''));
  if (!NAME.test(v)) {
    throw new UserInputError('DASHBOARD_HOST', `--allow-host ${JSON.stringify(value)}: not a host name or address`, {
      hint: 'pass the bare name browsers use for the dashboard, without scheme, port or path: --allow-host dash.example.org',
    });
  }
  return v;
}

export class AllowedHosts {
  private readonly names: Set<string>;
  private port = 0;

  constructor(bind: string, extra: readonly string[] = []) {
    const names = new Set<string>([asHostName(bind), ...extra.map(parseAllowedHost)]);
    const wildcard = bind === '0.0.0.0' || bind === '::' || bind === '';
    if (isLoopback(bind) || wildcard) for (const n of LOOPBACK_NAMES) names.add(n);
    if (wildcard || !isLoopback(bind)) {
      names.add(hostname().toLowerCase());
      if (wildcard)
        for (const list of Object.values(networkInterfaces()))
          for (const a of list ?? []) names.add(asHostName(a.address.replace(/%.*$/, '')));
    }
    this.names = names;
  }

  /** The port the server listens on (known once it listens). */
  listening(port: number): void {
    this.port = port;
  }

  /** Whether a Host header names this dashboard. */
  allows(header: string | undefined): boolean {
    if (header === undefined) return false;
    const m = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(header.trim());
    if (!m) return false;
    const port = m[2] === undefined ? 80 : Number(m[2]);
    return port === this.port && this.names.has(m[1]!.toLowerCase());
  }

  /** `127.0.0.1:7777, localhost:7777, …` for a refusal's message. */
  describe(): string {
    return [...this.names].map((n) => `${n}:${this.port}`).join(', ');
  }
}
