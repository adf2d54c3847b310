/**
 * `--redis-url-file FILE` (README and serve's hint offer it) on every command that talks to the
 * cluster's Redis, declared once (cli/redis-url-option.ts): each command file that finds its Redis
 * through requireTarget or redisUrlFromArgs (cli/embedded/redis-target.ts) lists it in --help; `orch status` and `orch report` connect
 * through it with REDIS_URL unset; a file others may read is refused naming the fix.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { freshPrefix } from '../utils/redis.ts';
import { runOrch, STACK_FRAME } from './run-orch.ts';

const COMMANDS_DIR = 'cli/commands';
/** The command files that find the cluster's Redis from their argv (orch hosts reads its cluster file's). */
const redisCommands = readdirSync(COMMANDS_DIR)
  .filter(
    (f) =>
      f.endsWith('.ts') && /\b(requireTarget|redisUrlFromArgs)\(/.test(readFileSync(join(COMMANDS_DIR, f), 'utf8')),
  )
  .map((f) => f.replace(/\.ts$/, ''));

describe('--redis-url-file on every command that talks to the cluster', { timeout: 180_000 }, () => {
  let server: RedisServerProcess;
  let dir: string;
  before(async () => {
    server = await startRedisServer();
    dir = mkdtempSync(join(tmpdir(), 'orch-url-file-'));
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('each such command lists it in --help, from the one definition', () => {
    assert.ok(redisCommands.length >= 10, `found ${redisCommands.join(', ')}`);
    for (const command of redisCommands) {
      const r = runOrch([command, '--help']);
      assert.equal(r.status, 0, `${command}: ${r.stderr}`);
      assert.match(
        r.stdout,
        // yargs wraps the description where a command's longest option leaves it room
        /--redis-url-file\s+file\s+\(mode\s+0600,\s+yours\)\s+whose\s+first\s+line\s+is\s+the\s+cluster's\s+Redis\s+URL/,
        `orch ${command} --help`,
      );
    }
    const declaring = readdirSync(COMMANDS_DIR).filter((f) =>
      readFileSync(join(COMMANDS_DIR, f), 'utf8').includes("option('redis-url-file'"),
    );
    assert.deepEqual(declaring, [], 'the option is declared in cli/redis-url-option.ts only');
  });

  it('orch status and orch report connect through it with REDIS_URL unset', () => {
    const file = join(dir, 'url');
    writeFileSync(file, `${server.url}\n`, { mode: 0o600 });
    const env = { REDIS_URL: '', ORCH_PREFIX: freshPrefix() };
    const status = runOrch(['status', '--redis-url-file', file, '--json'], env);
    assert.equal(status.status, 0, status.stderr);
    assert.ok(Array.isArray(JSON.parse(status.stdout).experiments), status.stdout);
    const report = runOrch(['report', 'no-such-1', '--redis-url-file', file], env);
    assert.equal(report.status, 2, report.stderr);
    assert.match(report.stderr, /no experiment "no-such-1"|NO_SUCH_EXPERIMENT/);
    assert.doesNotMatch(report.stderr, /needs REDIS_URL/);
  });

  it('a file others may read is refused with the fix, before any connection', () => {
    const file = join(dir, 'open-url');
    writeFileSync(file, `${server.url}\n`);
    chmodSync(file, 0o644);
    const r = runOrch(['cancel', 'x-1', '--redis-url-file', file], { REDIS_URL: '' });
    assert.equal(r.status, 2, r.stderr);
    assert.ok(r.stderr.includes(`--redis-url-file ${file}: mode 644`), r.stderr);
    assert.ok(r.stderr.includes(`chmod 600 ${file}`), r.stderr);
    assert.doesNotMatch(r.stderr, STACK_FRAME);
    assert.ok(!r.stderr.includes(server.password ?? '\0'), 'the password is never printed');
  });
});
