import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { CardRegistry } from '../../store/card-registry.ts';
import { connectRedis } from '../../store/connect.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { runOrch, STACK_FRAME } from '../cli/run-orch.ts';
import { sshdMissing, suiteSkip } from '../utils/required-suite.ts';
import { keygen, SECRET_ENV, type SshdProcess, startSshd } from './sshd-process.ts';

/** Alive and not a zombie (pid 1 here may never reap an orphaned worker). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^State:\s*Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

describe('orch hosts up|down over a real sshd', { timeout: 240_000, skip: suiteSkip('ssh', sshdMissing()) }, () => {
  let sshd: SshdProcess | undefined;
  let redis: RedisServerProcess | undefined;
  const workerPids: number[] = [];

  before(async () => {
    sshd = await startSshd();
    redis = await startRedisServer();
  });

  after(async () => {
    for (const pid of workerPids) if (running(pid)) process.kill(pid, 'SIGKILL');
    await redis?.stop();
    await sshd?.stop();
  });

  function clusterFile(name: string, keyFile: string): string {
    const s = sshd!;
    const file = join(s.dir, `${name}.yaml`);
    writeFileSync(
      file,
      [
        'kind: cluster',
        `name: ${name}`,
        `redis: { url: "${redis!.url}" }`,
        'hosts:',
        '  - name: sshhost',
        `    ssh: { host: 127.0.0.1, port: ${s.port}, user: ${s.user}, key_file: "${keyFile}", host_key: "${s.hostKeyLine()}" }`,
        `    build_dir: "${join(s.dir, 'builds')}"`,
        `    repo_dir: "${process.cwd()}"`,
        `    node: "${process.execPath}"`,
        `    run_dir: "${join(s.dir, 'run')}"`,
        '',
      ].join('\n'),
    );
    return file;
  }

  it('up starts a worker that registers its cards as host sshhost; down stops it', async () => {
    const file = clusterFile('sshtest', sshd!.clientKey);
    const up = runOrch(['hosts', 'up', file, '--json', '--timeout', '60'], SECRET_ENV);
    const upReport = up.stdout ? JSON.parse(up.stdout) : undefined;
    const pid: number | undefined = upReport?.hosts?.[0]?.pid;
    if (pid) workerPids.push(pid);
    assert.equal(up.status, 0, `${up.stdout}\n${up.stderr}\nsshd: ${sshd!.output()}`);
    assert.equal(upReport.hosts[0].status, 'up');
    assert.ok(pid && running(pid), `worker pid ${pid} should run`);

    const conn = connectRedis(redis!.url, { log: pino({ level: 'silent' }) });
    try {
      const registry = new CardRegistry(conn);
      const live = await registry.liveCards('sshhost');
      assert.ok(live.length > 0, 'the worker registered no cards');
      assert.ok(live.every((c) => c.host === 'sshhost'));
      assert.deepEqual(
        upReport.hosts[0].cards,
        live.map((c) => c.id),
      );
      assert.equal((await registry.hostInfo('sshhost')).pid, pid);
      // the credentials' files were read once and removed: a program of the worker's user finds none
      assert.deepEqual(
        readdirSync(join(sshd!.dir, 'run')).filter((f) => /\.(secret|redis-url)$/.test(f)),
        [],
      );

      // a second up finds the worker running and starts no other
      const again = runOrch(['hosts', 'up', file, '--json'], SECRET_ENV);
      assert.equal(again.status, 0, again.stderr);
      assert.equal(JSON.parse(again.stdout).hosts[0].pid, pid);

      const down = runOrch(['hosts', 'down', file, '--json', '--timeout', '60'], SECRET_ENV);
      assert.equal(down.status, 0, `${down.stdout}\n${down.stderr}`);
      assert.deepEqual(JSON.parse(down.stdout).hosts[0], { host: 'sshhost', status: 'down', pid });
      assert.equal(running(pid), false, `worker pid ${pid} still runs after hosts down`);
      assert.equal((await registry.hostInfo('sshhost')).alive, false);
      assert.deepEqual(await registry.liveCards('sshhost'), []);
    } finally {
      conn.disconnect();
    }
  });

  it('a key sshd does not accept fails with the cluster file path and the fix, no stack', () => {
    const stranger = join(sshd!.dir, 'stranger_key');
    keygen(stranger);
    const r = runOrch(['hosts', 'up', clusterFile('badkey', stranger)], SECRET_ENV);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stdout, /sshhost: failed: .*hosts\[0\]\.ssh: .* refused the key .*stranger_key/);
    assert.match(r.stdout, /fix: add the public key of .*hosts\[0\]\.ssh\.key_file to .*authorized_keys/);
    assert.match(r.stderr, /HOSTS_FAILED|1 of 1 host\(s\) failed/);
    assert.doesNotMatch(r.stderr, STACK_FRAME);
  });

  it('a missing key file and an unreachable port fail clearly too', () => {
    const missing = runOrch(['hosts', 'up', clusterFile('nokey', join(sshd!.dir, 'no_such_key'))], SECRET_ENV);
    assert.equal(missing.status, 2, missing.stderr);
    assert.match(missing.stdout, /hosts\[0\]\.ssh\.key_file: cannot read .*no_such_key \(ENOENT\)/);

    const file = clusterFile('noport', sshd!.clientKey);
    writeFileSync(file, readFileSync(file, 'utf8').replace(`port: ${sshd!.port}`, 'port: 1'));
    const unreachable = runOrch(['hosts', 'up', file], SECRET_ENV);
    assert.equal(unreachable.status, 2, unreachable.stderr);
    assert.match(unreachable.stdout, /hosts\[0\]\.ssh: cannot reach .*127\.0\.0\.1:1 \(ECONNREFUSED/);
    assert.match(unreachable.stdout, /fix: check .*hosts\[0\]\.ssh\.host and .*\.port/);
  });
});
