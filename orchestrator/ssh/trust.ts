/**
 * `orch hosts trust`: fetch each host's key (and its ProxyJump hops'), print its fingerprint,
 * and append it to known_hosts only once the user confirmed it (or passed --yes). A key that
 * differs from a known one is never added: that is removed by hand, after asking why it changed.
 * Hosts are handled one after another, so the questions come in order.
 */
import type { Logger } from 'pino';
import type { Cluster } from '../../jobs/cluster.ts';
import { OrchError, UserInputError } from '../../jobs/errors.ts';
import { messageOf } from '../../jobs/message-of.ts';
import { appendKnownHost } from './known-hosts.ts';
import { type HostKeyEvent, SshHost } from './ssh-host.ts';

export interface TrustReport {
  host: string;
  /** the known_hosts name of the key decided last (the host's, or the hop that stopped it) */
  name?: string;
  fingerprint?: string;
  status: 'already-trusted' | 'added' | 'declined' | 'failed';
  /** `file` the line went to */
  added_to?: string[];
  reason?: string;
  hint?: string;
}

export interface TrustOptions {
  file: string;
  cluster: Cluster;
  /** only this host of the cluster file */
  only?: string;
  log: Logger;
  /** asks the user; false without a terminal and without --yes */
  confirm: (question: string) => Promise<boolean>;
  /** progress lines (a key's fingerprint before the question) */
  say: (line: string) => void;
}

export async function trustHosts(opts: TrustOptions): Promise<TrustReport[]> {
  const hosts = opts.cluster.hosts
    .map((host, index) => ({ host, index }))
    .filter((h) => opts.only === undefined || h.host.name === opts.only);
  if (hosts.length === 0) {
    throw new UserInputError('HOSTS_FAILED', `${opts.file}: no host named ${opts.only}`, {
      hint: `name one of ${opts.cluster.hosts.map((h) => h.name).join(', ')}, or none for all`,
    });
  }
  const reports: TrustReport[] = [];
  for (const { host, index } of hosts) {
    const report: TrustReport = { host: host.name, status: 'already-trusted' };
    const decide = async (e: HostKeyEvent): Promise<boolean> => {
      report.name = e.name;
      report.fingerprint = e.verdict.fingerprint;
      const what = `${e.name}${e.final ? '' : ` (ProxyJump hop of ${host.name})`}`;
      if (e.verdict.status === 'trusted') {
        opts.say(`${what}: ${e.verdict.type} ${e.verdict.fingerprint} is already trusted`);
        return true;
      }
      // changed or revoked: connect() refuses it with the man-in-the-middle warning
      if (e.verdict.status !== 'unknown') return false;
      opts.say(`${what}: ${e.verdict.type} key ${e.verdict.fingerprint}`);
      if (!(await opts.confirm(`trust ${what} with key ${e.verdict.fingerprint}?`))) {
        report.status = 'declined';
        return e.final
          ? false
          : Promise.reject(
              new UserInputError('SSH_HOST_UNKNOWN', `${what}: not trusted (declined)`, {
                hint: 'run again and answer yes, or pass --yes, once the fingerprint is checked',
              }),
            );
      }
      const file = e.target.knownHostsFiles[0]!;
      appendKnownHost(file, e.name, e.blob);
      report.status = 'added';
      report.added_to = [...(report.added_to ?? []), file];
      opts.say(`${what}: added to ${file}`);
      return true;
    };
    try {
      await SshHost.probeHostKey({ file: opts.file, index, host }, decide);
      reports.push(report);
    } catch (err) {
      if (report.status === 'declined') {
        reports.push({ ...report, reason: messageOf(err) });
        continue;
      }
      reports.push({
        ...report,
        status: 'failed',
        reason: messageOf(err),
        ...(err instanceof OrchError && err.hint ? { hint: err.hint } : {}),
      });
    }
  }
  return reports;
}
