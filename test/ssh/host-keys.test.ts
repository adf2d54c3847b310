/**
 * `orch hosts` trusts no unknown host, over real loopback sshds and a temp HOME (the real
 * ~/.ssh is never read or written): an unknown host key is refused with its fingerprint and the
 * commands that trust it; `hosts trust --yes` adds it (a hashed known_hosts entry works too),
 * without --yes and without a terminal nothing is added; `hosts up` then brings up the host
 * while an unreachable one is reported with its address; `hosts status` shows the worker, its
 * version, cards and heartbeat; a changed key (sshd restarted with a new one) is refused as a
 * possible man-in-the-middle and never added; a cluster-file host_key is trusted; a
 * ~/.ssh/config alias (HostName, User, Port, IdentityFile) and a ProxyJump through a second
 * sshd are followed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { orchVersion } from '../../cli/version.ts';
import { formatWorkerVersion } from '../../jobs/worker-version.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { runOrch, STACK_FRAME } from '../cli/run-orch.ts';
import { isAlive } from '../utils/processes.ts';
import { sshdMissing, suiteSkip } from '../utils/required-suite.ts';
import { SECRET_ENV, type SshdProcess, startSshd } from './sshd-process.ts';

/** The fingerprint ssh-keygen prints for sshd's current host key. */
function fingerprintOf(s: SshdProcess): string {
  const r = spawnSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', join(s.dir, 'host_key.pub')], { encoding: 'utf8' });
  const fp = /SHA256:\S+/.exec(r.stdout)?.[0];
  assert.ok(fp, `ssh-keygen -l printed no fingerprint: ${r.stdout}${r.stderr}`);
  return fp;
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('orch hosts trusts no unknown host', { timeout: 300_000, skip: suiteSkip('ssh', sshdMissing()) }, () => {
  let sshd: SshdProcess;
  let jump: SshdProcess | undefined;
  let redis: RedisServerProcess;
  let home: string;
  let env: Record<string, string>;
  const pids: number[] = [];
  const knownHosts = () => join(home, '.ssh', 'known_hosts');

  before(async () => {
    sshd = await startSshd();
    redis = await startRedisServer();
    home = mkdtempSync(join(tmpdir(), 'orch-home-'));
    mkdirSync(join(home, '.ssh'), { mode: 0o700 });
    // no agent: the keys offered are only those the test names
    env = { HOME: home, SSH_AUTH_SOCK: '', ...SECRET_ENV };
  });
  after(async () => {
    for (const pid of pids) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    await redis?.stop();
    await sshd?.stop();
    await jump?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  function host(name: string, ssh: string): string[] {
    return [
      `  - name: ${name}`,
      `    ssh: ${ssh}`,
      `    build_dir: "${join(sshd.dir, 'builds')}"`,
      `    repo_dir: "${process.cwd()}"`,
      `    node: "${process.execPath}"`,
      `    run_dir: "${join(sshd.dir, `run-${name}`)}"`,
    ];
  }
  function clusterFile(name: string, hosts: string[][]): string {
    const file = join(sshd.dir, `${name}.yaml`);
    writeFileSync(file, ['kind: cluster', `redis: { url: "${redis.url}" }`, 'hosts:', ...hosts.flat(), ''].join('\n'));
    return file;
  }
  const direct = (extra = '') =>
    `{ host: 127.0.0.1, port: ${sshd.port}, user: ${sshd.user}, key_file: "${sshd.clientKey}"${extra} }`;

  it('an unknown host key is refused with its fingerprint and the commands that trust it; no worker starts', () => {
    const file = clusterFile('unknown', [host('sshhost', direct())]);
    const r = runOrch(['hosts', 'up', file], env);
    assert.equal(r.status, 2, `${r.stdout}\n${r.stderr}`);
    assert.match(
      r.stdout,
      new RegExp(
        `sshhost: failed: .*hosts\\[0\\]\\.ssh: the host key of \\[127\\.0\\.0\\.1\\]:${sshd.port} is not known: ssh-ed25519 ${esc(fingerprintOf(sshd))}`,
      ),
    );
    assert.match(
      r.stdout,
      new RegExp(
        `fix: .*orch hosts trust ${esc(file)} sshhost .*ssh-keyscan -p ${sshd.port} 127\\.0\\.0\\.1 >> ~/\\.ssh/known_hosts`,
      ),
    );
    assert.doesNotMatch(r.stderr, STACK_FRAME);
    assert.equal(
      existsSync(join(sshd.dir, 'run-sshhost', 'worker-sshhost.pid')),
      false,
      'a worker was started on an untrusted host',
    );
  });

  it('hosts trust without --yes and without a terminal adds nothing', () => {
    const file = clusterFile('unknown', [host('sshhost', direct())]);
    const r = runOrch(['hosts', 'trust', file], env);
    assert.equal(r.status, 2, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, new RegExp(`ssh-ed25519 key ${esc(fingerprintOf(sshd))}`));
    assert.match(r.stdout, /sshhost: not trusted .* \(declined\)/);
    assert.equal(existsSync(knownHosts()), false);
  });

  it('after hosts trust --yes (hashed entry), up starts the trusted host and reports the unreachable one; status shows the worker', () => {
    const one = clusterFile('unknown', [host('sshhost', direct())]);
    const t = runOrch(['hosts', 'trust', one, 'sshhost', '--yes'], env);
    assert.equal(t.status, 0, `${t.stdout}\n${t.stderr}`);
    assert.match(
      t.stdout,
      new RegExp(
        `sshhost: trusted \\[127\\.0\\.0\\.1\\]:${sshd.port} ${esc(fingerprintOf(sshd))} \\(added to ${esc(knownHosts())}\\)`,
      ),
    );
    assert.equal(readFileSync(knownHosts(), 'utf8'), `[127.0.0.1]:${sshd.port} ${sshd.hostKeyLine()}\n`);
    // the entry hashed as HashKnownHosts writes it: still found
    const h = spawnSync('ssh-keygen', ['-H', '-f', knownHosts()], { encoding: 'utf8' });
    assert.equal(h.status, 0, h.stderr);
    assert.match(readFileSync(knownHosts(), 'utf8'), /^\|1\|/);

    const file = clusterFile('two', [
      host('sshhost', direct()),
      host('deadhost', `{ host: 127.0.0.1, port: 1, user: ${sshd.user}, key_file: "${sshd.clientKey}" }`),
    ]);
    const up = runOrch(['hosts', 'up', file, '--json', '--timeout', '60'], env);
    const report = JSON.parse(up.stdout.split('\n')[0]!) as {
      hosts: { host: string; status: string; pid?: number; reason?: string }[];
    };
    const pid = report.hosts[0]?.pid;
    if (pid) pids.push(pid);
    assert.equal(up.status, 2, `${up.stdout}\n${up.stderr}`);
    assert.equal(report.hosts[0]?.status, 'up', up.stdout);
    assert.equal(report.hosts[1]?.status, 'failed');
    assert.match(report.hosts[1]?.reason ?? '', /hosts\[1\]\.ssh: cannot reach .*127\.0\.0\.1:1 \(ECONNREFUSED/);

    const own = orchVersion();
    const st = runOrch(['hosts', 'status', file, '--json'], env);
    assert.equal(st.status, 0, `${st.stdout}\n${st.stderr}`);
    const hosts = JSON.parse(st.stdout).hosts;
    assert.deepEqual(hosts[0].process, { state: 'running', pid });
    assert.equal(hosts[0].registered.pid, pid);
    assert.equal(hosts[0].registered.alive, true);
    assert.ok(hosts[0].registered.cards.length > 0);
    assert.match(
      hosts[0].registered.version,
      new RegExp(`^${esc(formatWorkerVersion({ orch: own.version, commit: own.commit, graphrt: '' }))}\\S+$`),
    );
    assert.equal(hosts[0].registered.version_differs, false);
    assert.ok(hosts[0].registered.alive_expires_in_ms > 0);
    assert.equal(hosts[1].process.state, 'unreachable');
    assert.match(hosts[1].process.reason, /127\.0\.0\.1:1 \(ECONNREFUSED/);
    const text = runOrch(['hosts', 'status', file], env);
    assert.match(
      text.stdout,
      new RegExp(
        `^sshhost: worker running \\(pid ${pid}\\); heartbeat alive \\(expires in [\\d.]+ s\\); version orch ${esc(own.version)} commit \\S+ graphrt \\S+; cards \\S`,
        'm',
      ),
    );
    assert.match(text.stdout, /^deadhost: unreachable: .*ECONNREFUSED/m);

    const down = runOrch(['hosts', 'down', one, '--json', '--timeout', '60'], env);
    assert.equal(down.status, 0, `${down.stdout}\n${down.stderr}`);
    assert.equal(pid !== undefined && isAlive(pid), false, 'the worker still runs after hosts down');
    const after = JSON.parse(runOrch(['hosts', 'status', one, '--json'], env).stdout).hosts[0];
    assert.deepEqual(after.process, { state: 'stopped' });
    assert.equal(after.registered.alive_expires_in_ms, null);
  });

  it('a changed host key is refused as a possible man-in-the-middle and never added; a cluster-file host_key of the new key is trusted', async () => {
    const oldFp = fingerprintOf(sshd);
    await sshd.restart({ newHostKey: true });
    const newFp = fingerprintOf(sshd);
    assert.notEqual(newFp, oldFp);
    const file = clusterFile('unknown', [host('sshhost', direct())]);
    const before = readFileSync(knownHosts(), 'utf8');

    const up = runOrch(['hosts', 'up', file], env);
    assert.equal(up.status, 2, `${up.stdout}\n${up.stderr}`);
    assert.match(
      up.stdout,
      new RegExp(
        `POSSIBLE MAN-IN-THE-MIDDLE: \\[127\\.0\\.0\\.1\\]:${sshd.port} presented the ssh-ed25519 key ${esc(newFp)}, not the one known for it \\(${esc(knownHosts())}:1\\)`,
      ),
    );
    assert.match(up.stdout, new RegExp(`fix: .*ssh-keygen -R '\\[127\\.0\\.0\\.1\\]:${sshd.port}'`));

    const t = runOrch(['hosts', 'trust', file, '--yes'], env);
    assert.equal(t.status, 2, `${t.stdout}\n${t.stderr}`);
    assert.match(t.stdout, /sshhost: failed: .*POSSIBLE MAN-IN-THE-MIDDLE/);
    assert.equal(readFileSync(knownHosts(), 'utf8'), before, 'hosts trust --yes added a changed key');

    const pinned = clusterFile('pinned', [host('sshhost', direct(`, host_key: "${sshd.hostKeyLine()}"`))]);
    const st = runOrch(['hosts', 'status', pinned, '--json'], env);
    assert.equal(st.status, 0, `${st.stdout}\n${st.stderr}`);
    assert.deepEqual(JSON.parse(st.stdout).hosts[0].process, { state: 'stopped' });

    // the way the hint says: remove the old entry, trust the new key
    assert.equal(spawnSync('ssh-keygen', ['-R', `[127.0.0.1]:${sshd.port}`, '-f', knownHosts()]).status, 0);
    assert.equal(runOrch(['hosts', 'trust', file, '--yes'], env).status, 0);
    assert.equal(runOrch(['hosts', 'status', file], env).status, 0);
  });

  it('a ~/.ssh/config alias gives HostName, User, Port and IdentityFile', () => {
    writeFileSync(
      join(home, '.ssh', 'config'),
      [
        'Host gpu-alias',
        '  HostName 127.0.0.1',
        `  Port ${sshd.port}`,
        `  User ${sshd.user}`,
        `  IdentityFile ${sshd.clientKey}`,
        '',
      ].join('\n'),
    );
    const file = clusterFile('alias', [host('aliased', '{ host: gpu-alias }')]);
    const st = runOrch(['hosts', 'status', file, '--json'], env);
    assert.equal(st.status, 0, `${st.stdout}\n${st.stderr}`);
    assert.deepEqual(JSON.parse(st.stdout).hosts[0].process, { state: 'stopped' }, st.stdout);

    // the alias's User is used: a user sshd does not know is refused with it in the message
    writeFileSync(
      join(home, '.ssh', 'config'),
      [
        'Host gpu-alias',
        '  HostName 127.0.0.1',
        `  Port ${sshd.port}`,
        '  User nosuchuser',
        `  IdentityFile ${sshd.clientKey}`,
        '',
      ].join('\n'),
    );
    const bad = JSON.parse(runOrch(['hosts', 'status', file, '--json'], env).stdout).hosts[0].process;
    assert.equal(bad.state, 'unreachable');
    assert.match(bad.reason, new RegExp(`nosuchuser@127\\.0\\.0\\.1:${sshd.port} \\(gpu-alias\\) refused the key`));
  });

  it("a ProxyJump through a second sshd: trust adds the hop's key, then the host is reached through it", async () => {
    jump = await startSshd();
    // a copy: the jump sshd's dir goes when it stops, the key must not
    const jumpKey = join(home, '.ssh', 'jump_key');
    copyFileSync(jump.clientKey, jumpKey);
    writeFileSync(
      join(home, '.ssh', 'config'),
      [
        'Host jumpbox',
        '  HostName 127.0.0.1',
        `  Port ${jump.port}`,
        `  User ${jump.user}`,
        `  IdentityFile ${jumpKey}`,
        'Host behind',
        '  HostName 127.0.0.1',
        `  Port ${sshd.port}`,
        `  User ${sshd.user}`,
        `  IdentityFile ${sshd.clientKey}`,
        '  ProxyJump jumpbox',
        '',
      ].join('\n'),
    );
    const file = clusterFile('jumped', [host('behind', '{ host: behind }')]);
    const refused = JSON.parse(runOrch(['hosts', 'status', file, '--json'], env).stdout).hosts[0].process;
    assert.match(
      refused.reason,
      new RegExp(
        `the host key of \\[127\\.0\\.0\\.1\\]:${jump.port} \\(the ProxyJump hop on the way to behind\\) is not known`,
      ),
    );

    const t = runOrch(['hosts', 'trust', file, '--yes'], env);
    assert.equal(t.status, 0, `${t.stdout}\n${t.stderr}`);
    assert.match(t.stderr, new RegExp(`\\[127\\.0\\.0\\.1\\]:${jump.port} \\(ProxyJump hop of behind\\): added to`));
    const st = runOrch(['hosts', 'status', file, '--json'], env);
    assert.equal(st.status, 0, `${st.stdout}\n${st.stderr}`);
    assert.deepEqual(JSON.parse(st.stdout).hosts[0].process, { state: 'stopped' }, st.stdout);
    // the way goes through the jump host: without it the host is not reached
    const jumpPort = jump.port;
    await jump.stop();
    jump = undefined;
    const gone = JSON.parse(runOrch(['hosts', 'status', file, '--json'], env).stdout).hosts[0].process;
    assert.equal(gone.state, 'unreachable');
    assert.match(
      gone.reason,
      new RegExp(`cannot reach \\S+@127\\.0\\.0\\.1:${jumpPort} \\(jumpbox\\) \\(a ProxyJump hop\\) \\(ECONNREFUSED`),
    );
  });
});
