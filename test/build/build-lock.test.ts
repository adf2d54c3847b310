/**
 * The host build lock and cache with real processes: each build request runs in its own Node
 * process (build-client.ts) against a real redis-server, the way workers of several experiments
 * would; the slow-build fixture records when each build ran, so the tests count builds and
 * check overlap from the builds' own clocks.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { formatBuildState, type HostBuildState, readBuildState } from '../../store/build-state.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import type { BuildRequest } from '../../worker/builds/build-cache.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { ORCH_BIN } from '../utils/worker-process.ts';
import { type ClientResult, FIXTURES, isAlive, readTrace, startBuildClient } from './build-helpers.ts';

let server: RedisServerProcess;
let redis: Redis;
before(async () => {
  server = await startRedisServer();
  redis = client(server.url);
});
after(async () => {
  redis.disconnect();
  await server.stop();
});

function slowBuild(flags: string[]): BuildRequest {
  return {
    build: {
      cmd: 'sh build.sh',
      artifacts: ['out/tool'],
      key: { git: false, dirty_diff: false, flags, toolchain: [] },
      dir: join(FIXTURES, 'cmd-slow-build'),
    },
    experiment: `exp-${flags.join('-')}`,
  };
}

/** Same recipe (cmd, artifacts, flags), another key: "a similar build" at another toolchain. */
function similarBuild(version: string, experiment: string): BuildRequest {
  const r = slowBuild(['-O2']);
  return { ...r, build: { ...r.build, key: { ...r.build.key, toolchain: [`echo ${version}`] } }, experiment };
}

function tmp(tag: string): string {
  return mkdtempSync(join(tmpdir(), `orch-build-${tag}-`));
}

const built = (r: ClientResult) => ('error' in r ? assert.fail(`build request failed: ${r.error.message}`) : r);

describe('build lock', () => {
  test('five requests for one key on one host: exactly one build runs, all five use its artifact', async () => {
    const root = tmp('five');
    const trace = join(root, 'trace');
    const prefix = freshPrefix('b5');
    const clients = Array.from({ length: 5 }, (_, i) =>
      startBuildClient(
        { root, host: 'h1', redisUrl: server.url, prefix, request: { ...slowBuild(['-O2']), experiment: `exp${i}` } },
        { BUILD_TRACE: trace, BUILD_SLEEP: '3' },
      ),
    );
    // While the build runs, the view shows a holder and the waiters in positions 1..n.
    const seen = await waitFor(
      'a holder and waiters in the Redis view',
      async () => {
        const s = (await readBuildState(redis, { prefix })).find((h) => h.host === 'h1');
        return s?.holder && s.waiters.length > 0 ? s : null;
      },
      { timeoutMs: 20_000 },
    );
    assert.deepEqual(
      seen.waiters.map((w) => w.position),
      seen.waiters.map((_, i) => i + 1),
    );
    const lines = formatBuildState([seen]);
    assert.match(
      lines[0]!,
      /^build lock h1: held by exp\d \(pid \d+, key [0-9a-f]{12}\) for [0-9.]+ s; no past build of this recipe$/,
    );
    assert.match(lines[1]!, /^ {2}#1 exp\d \(pid \d+, key [0-9a-f]{12}\) waiting [0-9.]+ s;/);

    const results = (await Promise.all(clients.map((c) => c.result))).map(built);
    const builds = readTrace(trace);
    assert.equal(builds.length, 1, `exactly one build ran: ${JSON.stringify(builds)}`);
    assert.equal(new Set(results.map((r) => r.dir)).size, 1);
    assert.equal(results.filter((r) => r.outcome === 'built').length, 1);
    assert.ok(results.every((r) => r.outcome !== 'built' || r.build_ms! >= 3000));
    for (const r of results) assert.ok(existsSync(r.artifacts[0]!), `artifact ${r.artifacts[0]} exists`);
    console.log(
      `five requests: outcomes ${results.map((r) => r.outcome).join(',')}; build ${results.find((r) => r.outcome === 'built')!.build_ms} ms; max wait ${Math.max(...results.map((r) => r.wait_ms))} ms; view while building: holder + ${seen.waiters.length} waiting`,
    );

    // After: the view is empty again and remembers how long the recipe took.
    const state = (await readBuildState(redis, { prefix })).find((h) => h.host === 'h1')!;
    assert.equal(state.holder, null);
    assert.deepEqual(state.waiters, []);

    // A later experiment with the same key reuses the artifact without building or locking.
    const again = startBuildClient(
      { root, host: 'h1', redisUrl: server.url, prefix, request: slowBuild(['-O2']) },
      { BUILD_TRACE: trace },
    );
    const r6 = built(await again.result);
    assert.equal(r6.outcome, 'cached');
    assert.equal(r6.dir, results[0]!.dir);
    assert.equal(readTrace(trace).length, 1);
  });

  test("the staging area is the lock holder's alone: a broken tmp/ left behind fails no request, the next build clears it", async () => {
    // tmp/ as a dangling symlink: what a waiter touching tmp/ meets when the holder removes it
    // under it (a recursive mkdir finds it, then its check finds nothing: ENOENT)
    const root = tmp('staging');
    symlinkSync(join(root, 'gone'), join(root, 'tmp'));
    const r = built(
      await startBuildClient(
        { root, host: 'h1', request: slowBuild(['-Os']) },
        { BUILD_TRACE: join(root, 'trace'), BUILD_SLEEP: '0' },
      ).result,
    );
    assert.equal(r.outcome, 'built');
    assert.ok(existsSync(r.artifacts[0]!));
    assert.ok(lstatSync(join(root, 'tmp')).isDirectory(), 'the holder replaced the broken tmp/ with its own');
  });

  test('two keys on one host never overlap; on two hosts they run in parallel', async () => {
    const trace1 = join(tmp('trace'), 'trace');
    const root = tmp('one-host');
    const one = [
      startBuildClient({ root, host: 'h1', request: slowBuild(['-O1']) }, { BUILD_TRACE: trace1, BUILD_SLEEP: '2' }),
      startBuildClient({ root, host: 'h1', request: slowBuild(['-O3']) }, { BUILD_TRACE: trace1, BUILD_SLEEP: '2' }),
    ];
    (await Promise.all(one.map((c) => c.result))).map(built);
    const [a, b] = readTrace(trace1).sort((x, y) => x.start - y.start);
    assert.ok(a && b && a.key !== b.key, 'two builds of two keys');
    assert.ok(
      a.end! <= b.start,
      `one host: the second build starts after the first ends (${a.start}..${a.end} then ${b.start}..${b.end})`,
    );

    const trace2 = join(tmp('trace'), 'trace');
    const two = [
      startBuildClient(
        { root: tmp('host-a'), host: 'ha', request: slowBuild(['-O1']) },
        { BUILD_TRACE: trace2, BUILD_SLEEP: '2' },
      ),
      startBuildClient(
        { root: tmp('host-b'), host: 'hb', request: slowBuild(['-O3']) },
        { BUILD_TRACE: trace2, BUILD_SLEEP: '2' },
      ),
    ];
    (await Promise.all(two.map((c) => c.result))).map(built);
    const [c, d] = readTrace(trace2).sort((x, y) => x.start - y.start);
    assert.ok(c && d);
    assert.ok(d.start < c.end!, `two hosts: the builds overlap (${c.start}..${c.end} and ${d.start}..${d.end})`);
    console.log(`one host: gap ${b.start - a.end!} ms between builds; two hosts: overlap ${c.end! - d.start} ms`);
  });

  test('kill -9 of the builder mid-build: its build dies with it, the lock is free at once, the next waiter builds', async () => {
    const root = tmp('kill');
    const trace = join(root, 'trace');
    const prefix = freshPrefix('bk');
    const victim = startBuildClient(
      { root, host: 'h1', redisUrl: server.url, prefix, request: slowBuild(['-Og']) },
      { BUILD_TRACE: trace, BUILD_SLEEP: '60' },
    );
    const victimEnd = victim.result.then(
      (r) => assert.fail(`the killed request answered ${JSON.stringify(r)}`),
      (err: Error) => err.message,
    );
    const first = await waitFor('the first build to start', () => readTrace(trace)[0], { timeoutMs: 20_000 });
    const next = startBuildClient(
      { root, host: 'h1', redisUrl: server.url, prefix, request: slowBuild(['-Og']) },
      { BUILD_TRACE: trace, BUILD_SLEEP: '1' },
    );
    await waitFor(
      'the second request to wait',
      async () => {
        const s: HostBuildState | undefined = (await readBuildState(redis, { prefix })).find((h) => h.host === 'h1');
        return s?.waiters.some((w) => w.pid === next.child.pid);
      },
      { timeoutMs: 20_000 },
    );
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    const second = await waitFor('the waiter to start its build', () => readTrace(trace)[1], { timeoutMs: 10_000 });
    const latency = second.start - killedAt;
    await waitFor('the killed build shell to be gone', () => !isAlive(first.pid), { timeoutMs: 2_000 });
    const r = built(await next.result);
    assert.match(await victimEnd, /signal SIGKILL/);
    assert.equal(r.outcome, 'built');
    assert.ok(existsSync(r.artifacts[0]!));
    assert.equal(first.end, null, 'the killed build never finished');
    assert.ok(latency < 3000, `the next build started ${latency} ms after kill -9`);
    // The dead builder's staging dir is gone; only the finished key remains.
    assert.deepEqual(readdirSync(join(root, 'artifacts')), [r.key]);
    console.log(`kill -9: next build started ${latency} ms after the kill; killed build shell ${first.pid} gone`);
  });

  test('a failed build fails every waiter with the last lines of its log; one build ran', async () => {
    const root = tmp('fail');
    const request: BuildRequest = {
      build: {
        cmd: 'sleep 2; sh build.sh',
        artifacts: ['out/train'],
        key: { git: false, dirty_diff: false, flags: [], toolchain: [] },
        dir: join(FIXTURES, 'cmd-build-fails'),
      },
    };
    const clients = Array.from({ length: 3 }, () => startBuildClient({ root, host: 'h1', request }));
    const results = await Promise.all(clients.map((c) => c.result));
    for (const r of results) {
      assert.ok('error' in r, 'every request fails');
      assert.equal(r.error.code, 'BUILD_FAILED');
      assert.match(
        r.error.message,
        /^workload\.build\.cmd: the build "sleep 2; sh build\.sh" in \S+ exited 2 after [0-9.]+ s; last lines of \S+\.log:/,
      );
      assert.match(r.error.message, /\| collect2: error: ld returned 1 exit status/);
      assert.match(r.error.message, /\| \[3\/3\] linking train/);
    }
    assert.equal(readdirSync(join(root, 'logs')).length, 1, 'one build ran, the waiters shared its failure');
    assert.equal(results.filter((r) => 'error' in r && r.error.message.includes('fails with it')).length, 2);
  });

  test("orch status shows the holder, since when, how long similar builds took, and each waiter's position", async () => {
    const root = tmp('status');
    const prefix = freshPrefix('bs');
    const cfg = { root, host: 'h1', redisUrl: server.url, prefix };
    built(
      await startBuildClient(
        { ...cfg, request: similarBuild('v1', 'exp-earlier') },
        { BUILD_TRACE: join(root, 'trace'), BUILD_SLEEP: '1' },
      ).result,
    );
    const holder = startBuildClient(
      { ...cfg, request: similarBuild('v2', 'exp-holder') },
      { BUILD_TRACE: join(root, 'trace'), BUILD_SLEEP: '60' },
    );
    await waitFor(
      'the holder',
      async () => (await readBuildState(redis, { prefix }))[0]?.holder?.experiment === 'exp-holder',
      { timeoutMs: 20_000 },
    );
    const waiter = startBuildClient(
      { ...cfg, request: similarBuild('v3', 'exp-waiter') },
      { BUILD_TRACE: join(root, 'trace'), BUILD_SLEEP: '1' },
    );
    await waitFor('the waiter', async () => (await readBuildState(redis, { prefix }))[0]?.waiters.length === 1, {
      timeoutMs: 20_000,
    });
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        [ORCH_BIN, 'status'],
        { env: { ...process.env, REDIS_URL: server.url, ORCH_PREFIX: prefix } },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
      ),
    );
    const lines = out.slice(out.indexOf('\nbuilds\n')).split('\n').filter(Boolean);
    assert.equal(lines[0], 'builds', out);
    assert.match(
      lines[1]!,
      new RegExp(
        `^  build lock h1: held by exp-holder \\(pid ${holder.child.pid}, key [0-9a-f]{12}\\) for [0-9.]+ s; similar builds took [0-9.]+ s \\(median of 1\\)$`,
      ),
    );
    assert.match(
      lines[2]!,
      new RegExp(
        `^    #1 exp-waiter \\(pid ${waiter.child.pid}, key [0-9a-f]{12}\\) waiting [0-9.]+ s; similar builds took [0-9.]+ s \\(median of 1\\)$`,
      ),
    );
    console.log(`orch status:\n${lines.join('\n')}`);
    const holderEnd = holder.result.catch(() => 'killed');
    holder.child.kill('SIGKILL');
    assert.equal(await holderEnd, 'killed');
    assert.equal(built(await waiter.result).outcome, 'built');
  });
});
