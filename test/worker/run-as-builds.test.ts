/**
 * `orch worker --run-as USER` with builds and rank caches (worker/builds/build-cache-sharing.ts,
 * worker/command/rank-caches.ts): a real worker, run as root, runs a resident command workload
 * whose program is its build's artifact (made 0700 and 0600 by the build, so the artifact's group
 * must open it, not its others' bits) and writes into TORCHINDUCTOR_CACHE_DIR. The experiment
 * finishes, and the program, as USER, could write its rank cache but neither an artifact nor the
 * artifacts directory, nor read the worker's secret file or build logs. A build cache under a
 * directory USER cannot enter refuses the worker's start, naming that directory.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { resolveRunAs } from '../../worker/run-as.ts';
import { runOrch, spawnOrch } from '../orchestrator/orch-cluster.ts';
import { TEST_CLUSTER_SECRET } from '../utils/cluster-secret.ts';
import { freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/ranks/orch-rank.mjs', import.meta.url));
const USER = 'orch-test-run';
const root = process.getuid?.() === 0;
const skip = !root && 'not root: only root can switch to a second local user (useradd, setpriv)';

/** The program: what it could do as the run-as user, into its rank cache, then the protocol fixture. */
const PROGRAM = `#!/bin/sh
out="$TORCHINDUCTOR_CACHE_DIR/probe-$$.txt"
{
  echo "uid=$(id -u)"
  if cat "$PROBE_SECRET" >/dev/null 2>&1; then echo secret-read; else echo secret-refused; fi
  if ls "$PROBE_BUILD_ROOT/logs" >/dev/null 2>&1; then echo logs-read; else echo logs-refused; fi
  if touch "$ORCH_ARTIFACTS/planted" 2>/dev/null; then echo artifacts-dir-written; else echo artifacts-dir-refused; fi
  if echo tampered >>"$ORCH_ARTIFACTS/orch-rank.mjs" 2>/dev/null; then echo artifact-written; else echo artifact-refused; fi
} >"$out" || exit 3
exec "$PROBE_NODE" "$ORCH_ARTIFACTS/orch-rank.mjs"
`;

describe('orch worker --run-as with builds and rank caches', () => {
  const env = useWorkerEnv('runas-builds');

  test('the program runs its artifact and writes its rank cache as the run-as user; artifacts, secret and logs stay closed to it', {
    skip,
    timeout: 180_000,
  }, async () => {
    const runAs = resolveRunAs(USER, { create: true, log: () => {} });
    // the test's own directory: passable by others, as a build cache's parent must be
    const d = mkdtempSync(join(env.dir, 'open-'));
    chmodSync(env.dir, 0o755);
    chmodSync(d, 0o755);
    const buildRoot = join(d, 'cache', 'builds');
    const secretFile = join(d, 'cluster-secret');
    writeFileSync(secretFile, TEST_CLUSTER_SECRET, { mode: 0o600 });
    const src = join(d, 'src');
    mkdirSync(src);
    writeFileSync(join(src, 'prog.sh'), PROGRAM);
    writeFileSync(join(src, 'orch-rank.mjs'), readFileSync(FIXTURE));
    // owner-only modes, as a build under umask 077 leaves them: only the group sharing opens them
    writeFileSync(
      join(src, 'build.sh'),
      'set -e\ncp prog.sh orch-rank.mjs "$ORCH_BUILD_OUT/"\nchmod 700 "$ORCH_BUILD_OUT/prog.sh"\nchmod 600 "$ORCH_BUILD_OUT/orch-rank.mjs"\n' +
        // the build is the user's program too: who ran it, and whether it could read the secret
        `id -u > "$ORCH_BUILD_OUT/built-by"\nif cat ${secretFile} >/dev/null 2>&1; then echo secret-read; else echo secret-refused; fi >> "$ORCH_BUILD_OUT/built-by"\n`,
    );
    const spec = join(src, 'runas.yaml');
    writeFileSync(
      spec,
      `name: runas
design: ab
workload:
  runtime: command
  build: { cmd: sh build.sh, artifacts: [prog.sh, orch-rank.mjs, built-by], dir: ${src}, key: { git: false, dirty_diff: false } }
  run:
    cmd: $ORCH_ARTIFACTS/prog.sh
    mode: resident
    env: ${JSON.stringify({ PROBE_SECRET: secretFile, PROBE_BUILD_ROOT: buildRoot, PROBE_NODE: process.execPath })}
  toggles: { GRAPH: request, STALE: request }
  warmup: 1
  steps: 3
toggles: [GRAPH, STALE]
arms:
  - { name: eager, toggles: { GRAPH: false } }
  - { name: graph, toggles: { GRAPH: true } }
reps: 2
blocks: { count: 1 }
gates: { identity: false }
`,
    );
    const prefix = freshPrefix();
    const orchEnv = { REDIS_URL: env.server.url, ORCH_PREFIX: prefix, ORCH_LOG: 'warn' };
    const serve = spawnOrch(['serve', '--leader-ttl', '1500', '--json'], orchEnv);
    try {
      const w = await env.spawn({
        host: 'ra1',
        prefix,
        args: ['--run-as', USER, '--build-dir', buildRoot, '--secret-file', secretFile],
      });
      const sub = await runOrch(['submit', spec, '--no-wait'], orchEnv);
      assert.equal(sub.code, 0, sub.stderr);
      const id = sub.stdout.trim();
      const store = new ExperimentStore(env.redis, prefix);
      const state = await waitFor(
        'the experiment ended',
        async () => {
          const s = await store.state(id);
          return s === 'done' || s === 'failed' || s === 'cancelled' ? s : null;
        },
        { timeoutMs: 120_000, intervalMs: 200 },
      );
      assert.equal(state, 'done', `${(await store.get(id))?.reason ?? ''}\n${w.log().slice(-4000)}`);

      const caches = join(d, 'cache', 'rank-caches', `as-${USER}`);
      assert.equal(statSync(caches).uid, runAs.uid, "the rank caches' directory is the run-as user's");
      assert.equal(statSync(caches).mode & 0o777, 0o700);
      const [set] = readdirSync(caches);
      const inductor = join(caches, set!, 'inductor');
      const probes = readdirSync(inductor).filter((f) => f.startsWith('probe-'));
      assert.ok(probes.length >= 1, 'the program wrote into TORCHINDUCTOR_CACHE_DIR');
      for (const p of probes) {
        assert.equal(statSync(join(inductor, p)).uid, runAs.uid, 'written by the run-as user');
        assert.deepEqual(readFileSync(join(inductor, p), 'utf8').trim().split('\n'), [
          `uid=${runAs.uid}`,
          'secret-refused',
          'logs-refused',
          'artifacts-dir-refused',
          'artifact-refused',
        ]);
      }
      const [key] = readdirSync(join(buildRoot, 'artifacts'));
      assert.deepEqual(
        readFileSync(join(buildRoot, 'artifacts', key!, 'built-by'), 'utf8')
          .trim()
          .split('\n'),
        [String(runAs.uid), 'secret-refused'],
        'the build ran as the run-as user and could not read the secret',
      );
      assert.equal(statSync(join(buildRoot, 'artifacts', key!, 'prog.sh')).uid, 0, "the artifacts are the worker's");
      assert.equal(
        readFileSync(join(buildRoot, 'artifacts', key!, 'orch-rank.mjs'), 'utf8'),
        readFileSync(FIXTURE, 'utf8'),
        'the artifact is as built',
      );
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
  });

  test('a build cache under a directory the run-as user cannot enter: the worker refuses to start, naming it', {
    skip,
    timeout: 60_000,
  }, async () => {
    const closed = mkdtempSync(join(env.dir, 'closed-'));
    chmodSync(closed, 0o700);
    const w = await env.spawn({
      host: 'ra2',
      prefix: freshPrefix(),
      args: ['--run-as', USER, '--build-dir', join(closed, 'builds')],
      noWait: true,
    });
    assert.deepEqual(await w.exited, { code: 2, signal: null });
    assert.match(
      w.log(),
      new RegExp(
        `orch: --run-as ${USER}: the build cache ${join(closed, 'builds')} lies under ${closed} \\(mode 0700, owner uid 0, group gid 0\\), which ${USER} cannot enter;.*\\n {2}hint: pass --build-dir .*/var/cache/orch/builds`,
      ),
    );
    assert.equal(statSync(closed).mode & 0o777, 0o700, 'the closed directory was left as it was');
  });
});
