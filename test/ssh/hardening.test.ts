/**
 * `orch hosts` on a host shared with other users, over a real loopback sshd: the worker's log
 * is not opened through a symlink planted in its place; `down` signals only the process it
 * started (start time in the pid file), not whatever pid a swapped pid file names; a run_dir
 * others can write is refused; the Redis URL never appears in a command line; an ssh exec
 * timeout message carries no password.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { ClusterSchema } from '../../jobs/cluster.ts';
import { startCommand } from '../../orchestrator/ssh/bring-up.ts';
import { SshHost } from '../../orchestrator/ssh/ssh-host.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { runOrch } from '../cli/run-orch.ts';
import { isAlive } from '../utils/processes.ts';
import { sshdMissing, suiteSkip } from '../utils/required-suite.ts';
import { SECRET_ENV, type SshdProcess, startSshd } from './sshd-process.ts';

describe('orch hosts on a shared host', { timeout: 240_000, skip: suiteSkip('ssh', sshdMissing()) }, () => {
  let sshd: SshdProcess;
  let redis: RedisServerProcess;
  const pids: number[] = [];

  before(async () => {
    sshd = await startSshd();
    redis = await startRedisServer();
  });
  after(async () => {
    for (const pid of pids) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    await redis.stop();
    await sshd.stop();
  });

  function clusterFile(name: string, runDir: string): string {
    const file = join(sshd.dir, `${name}.yaml`);
    writeFileSync(
      file,
      [
        'kind: cluster',
        `redis: { url: "${redis.url}" }`,
        'hosts:',
        `  - name: ${name}`,
        `    ssh: { host: 127.0.0.1, port: ${sshd.port}, user: ${sshd.user}, key_file: "${sshd.clientKey}", host_key: "${sshd.hostKeyLine()}" }`,
        `    build_dir: "${join(sshd.dir, 'builds')}"`,
        `    repo_dir: "${process.cwd()}"`,
        `    node: "${process.execPath}"`,
        `    run_dir: "${runDir}"`,
        '',
      ].join('\n'),
    );
    return file;
  }

  it('a symlink planted as the worker log is not followed: its target keeps its content', () => {
    const run = join(sshd.dir, 'run-sym');
    mkdirSync(run, { mode: 0o700 });
    const victim = join(sshd.dir, 'victim.txt');
    writeFileSync(victim, 'precious\n');
    symlinkSync(victim, join(run, 'worker-hsym.log'));
    const file = clusterFile('hsym', run);
    const up = runOrch(['hosts', 'up', file, '--json', '--timeout', '60'], SECRET_ENV);
    const pid = JSON.parse(up.stdout || '{}').hosts?.[0]?.pid as number | undefined;
    if (pid) pids.push(pid);
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n', 'the victim file was not truncated through the link');
    assert.equal(up.status, 0, `${up.stdout}\n${up.stderr}`);
    const down = runOrch(['hosts', 'down', file, '--json', '--timeout', '60'], SECRET_ENV);
    assert.equal(down.status, 0, down.stderr);
  });

  it('down does not signal a process a swapped pid file names', async () => {
    const run = join(sshd.dir, 'run-pid');
    mkdirSync(run, { mode: 0o700 });
    const bystander = spawn('sleep', ['300'], { stdio: 'ignore' });
    pids.push(bystander.pid!);
    const exited = new Promise((r) => bystander.once('exit', r));
    for (const content of [`${bystander.pid}\n`, `${bystander.pid} 1\n`]) {
      writeFileSync(join(run, 'worker-hpid.pid'), content);
      const down = runOrch(['hosts', 'down', clusterFile('hpid', run), '--json', '--timeout', '5'], SECRET_ENV);
      assert.equal(down.status, 0, down.stderr);
      // /proc, not the child's exit event: runOrch blocks this event loop while it runs
      assert.ok(isAlive(bystander.pid!), `the bystander (pid file "${content.trim()}") was not signalled`);
    }
    bystander.kill('SIGKILL');
    await exited;
  });

  it('a run_dir that others can write is refused with the reason', () => {
    const run = join(sshd.dir, 'run-open');
    mkdirSync(run);
    chmodSync(run, 0o777);
    const up = runOrch(['hosts', 'up', clusterFile('hopen', run)], SECRET_ENV);
    assert.equal(up.status, 2, up.stderr);
    assert.match(
      up.stdout,
      /hopen: failed: its run_dir is not private: run_dir .*run-open is not a private directory of \S+ \(owner uid \d+, mode 777\)/,
    );
  });

  it('the Redis URL is in no command line; the default run_dir is per user, not /tmp', () => {
    const cluster = ClusterSchema.parse({
      kind: 'cluster',
      redis: { url: redis.url },
      hosts: [{ name: 'h', ssh: { host: 'x', user: 'u', key_file: 'k' }, build_dir: '/b' }],
    });
    const cmd = startCommand(cluster.hosts[0]!);
    assert.ok(!cmd.includes(redis.password!), 'no password in the remote command line');
    assert.ok(!cmd.includes('/tmp/orch'));
    assert.match(cmd, /XDG_RUNTIME_DIR\/orch.*\$HOME\/\.orch\/run/s);
  });

  it('allow_command starts the worker with --allow-command, and only then', () => {
    const hosts = ClusterSchema.parse({
      kind: 'cluster',
      redis: { url: redis.url },
      hosts: [
        { name: 'h', ssh: { host: 'x', user: 'u', key_file: 'k' }, build_dir: '/b', allow_command: true },
        { name: 'g', ssh: { host: 'x', user: 'u', key_file: 'k' }, build_dir: '/b' },
      ],
    }).hosts;
    assert.deepEqual(
      hosts.map((h) => startCommand(h).includes("'--allow-command'")),
      [true, false],
    );
  });

  it('run_as starts the worker with --run-as USER (none included), and omitted leaves it to the worker', () => {
    const hosts = ClusterSchema.parse({
      kind: 'cluster',
      redis: { url: redis.url },
      hosts: ['orch-run', 'none', undefined].map((run_as, i) => ({
        name: `h${i}`,
        ssh: { host: 'x', user: 'u', key_file: 'k' },
        build_dir: '/b',
        allow_command: true,
        ...(run_as === undefined ? {} : { run_as }),
      })),
    }).hosts;
    assert.deepEqual(
      hosts.map((h) => /'--run-as' '([a-z-]+)'/.exec(startCommand(h))?.[1] ?? null),
      ['orch-run', 'none', null],
    );
    assert.throws(
      () =>
        ClusterSchema.parse({
          kind: 'cluster',
          redis: { url: redis.url },
          hosts: [
            { name: 'h', ssh: { host: 'x', user: 'u', key_file: 'k' }, build_dir: '/b', run_as: 'root; rm -rf /' },
          ],
        }),
      /expected a user name of the host/,
    );
  });

  it('an ssh exec that times out says so without the password it ran with', async () => {
    const cluster = ClusterSchema.parse({
      kind: 'cluster',
      redis: { url: redis.url },
      hosts: [
        {
          name: 'h',
          ssh: {
            host: '127.0.0.1',
            port: sshd.port,
            user: sshd.user,
            key_file: sshd.clientKey,
            host_key: sshd.hostKeyLine(),
          },
          build_dir: '/b',
        },
      ],
    });
    const ssh = await SshHost.connect({ file: 'c.yaml', index: 0, host: cluster.hosts[0]! }, pino({ level: 'silent' }));
    try {
      const err = await ssh.exec(`REDIS_URL='${redis.url}' sleep 30`, { timeoutMs: 500 }).then(
        () => null,
        (e: Error) => e,
      );
      assert.ok(err, 'the exec timed out');
      assert.match(
        err.message,
        /ssh exec timed out after 500 ms: REDIS_URL='redis:\/\/:\*\*\*@127\.0\.0\.1:\d+' sleep 30/,
      );
      assert.ok(!err.message.includes(redis.password!));
    } finally {
      ssh.close();
    }
  });
});
