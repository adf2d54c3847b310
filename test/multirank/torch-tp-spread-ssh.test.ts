/**
 * examples/torch-tp as a 2-rank spread gang over two hosts brought up over ssh (issue 39): a real
 * sshd on loopback (test/ssh/sshd-process.ts), `orch hosts up` of a cluster file with two hosts of
 * one cpu card each (`allow_command: true`), a real `orch serve`, and `orch submit` of torch-tp with
 * `placement: spread`, so rank 0 runs on tp1 and rank 1 on tp2 and torch.distributed (gloo) meets
 * on the MASTER_ADDR:MASTER_PORT rank 0's worker published through the gang's staging. The
 * identity gate runs on both ranks (on the CPU the graph arm's capture is refused by the program,
 * on each rank), eager is measured on both with the same outputs. Skipped without sshd or torch.
 */

import '../utils/cluster-secret.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { runOrch as runOrchSync } from '../cli/run-orch.ts';
import { type OrchChild, runOrch, spawnOrch } from '../orchestrator/orch-cluster.ts';
import { type SshdProcess, startSshd } from '../ssh/sshd-process.ts';
import { freshPrefix } from '../utils/redis.ts';
import { sshdMissing, suiteSkip, torchMissing } from '../utils/required-suite.ts';
import { readWritten } from '../utils/submit-spec.ts';

const ROOT = new URL('../../', import.meta.url).pathname.replace(/\/$/, '');
const HOSTS = ['tp1', 'tp2'];

interface Ev {
  rank: number | string;
  host?: string;
  event: Record<string, unknown>;
}

/** configs/torch-tp.yaml as a spread gang, with fewer reps and steps: the gang's shape is under test here, not its speed. */
function spec(dir: string): string {
  const text = readFileSync(join(ROOT, 'configs/torch-tp.yaml'), 'utf8')
    .replace('cmd: /usr/bin/python3 examples/torch-tp/tp.py', `cmd: /usr/bin/python3 ${ROOT}/examples/torch-tp/tp.py`)
    .replace(/^reps: \d+$/m, 'reps: 2')
    .replace(/^ {2}steps: \d+$/m, '  steps: 4')
    .replace(/^blocks: .*$/m, 'blocks: { count: 1, ranks: 2, placement: spread }');
  assert.match(text, /placement: spread/);
  const file = join(dir, 'torch-tp-spread.yaml');
  writeFileSync(file, text);
  return file;
}

function clusterFile(sshd: SshdProcess, redisUrl: string): string {
  const file = join(sshd.dir, 'tp-cluster.yaml');
  const host = (name: string) => [
    `  - name: ${name}`,
    `    ssh: { host: 127.0.0.1, port: ${sshd.port}, user: ${sshd.user}, key_file: "${sshd.clientKey}", host_key: "${sshd.hostKeyLine()}" }`,
    '    cards: ["cpu:0"]',
    '    allow_command: true',
    // the fixtures and the test's directories are its own user's: no orch-run for a root ssh user
    '    run_as: none',
    `    build_dir: "${join(sshd.dir, `builds-${name}`)}"`,
    `    repo_dir: "${ROOT}"`,
    `    node: "${process.execPath}"`,
    `    run_dir: "${join(sshd.dir, `run-${name}`)}"`,
  ];
  writeFileSync(
    file,
    ['kind: cluster', 'name: tp', `redis: { url: "${redisUrl}" }`, 'hosts:', ...HOSTS.flatMap(host), ''].join('\n'),
  );
  return file;
}

const skip = suiteSkip('ssh', sshdMissing()) || suiteSkip('torch', torchMissing());

describe('examples/torch-tp as a 2-rank gang spread over two ssh hosts', { timeout: 300_000, skip }, () => {
  let sshd: SshdProcess;
  let redis: RedisServerProcess;
  let serve: OrchChild | undefined;
  let cluster = '';
  const prefix = freshPrefix();
  const env = () => ({ REDIS_URL: redis.url, ORCH_PREFIX: prefix, ORCH_LOG: 'warn' });

  before(async () => {
    sshd = await startSshd();
    redis = await startRedisServer();
    cluster = clusterFile(sshd, redis.url);
  });
  after(async () => {
    if (cluster !== '') runOrchSync(['hosts', 'down', cluster], env());
    if (serve !== undefined) {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
    await redis?.stop();
    await sshd?.stop();
  });

  test('rank 0 on tp1, rank 1 on tp2: identity gated on both ranks, eager measured on both with the same outputs', async () => {
    const up = runOrchSync(['hosts', 'up', cluster, '--json', '--timeout', '60'], env());
    assert.equal(up.status, 0, `${up.stdout}\n${up.stderr}\nsshd: ${sshd.output()}`);
    serve = spawnOrch(['serve', '--leader-ttl', '1500', '--json'], env());
    const dir = mkdtempSync(join(sshd.dir, 'out-'));
    try {
      const t0 = Date.now();
      const r = await runOrch(['submit', spec(dir), '--results', join(dir, 'out')], env(), 240_000);
      console.log(`# orch submit of torch-tp spread over tp1 and tp2: ${Date.now() - t0} ms, exit ${r.code}`);
      const { summary, events } = readWritten<Ev>(join(dir, 'out'), `exit ${r.code}: ${r.stderr.slice(-3000)}`);
      assert.equal(summary.state, 'done', r.stderr.slice(-3000));
      const ofType = (type: string) => events.filter((e) => e.event.type === type && e.rank !== '');

      const hellos = ofType('hello');
      assert.deepEqual(hellos.map((e) => `${String(e.rank)}@${e.host}`).sort(), ['0@tp1', '1@tp2']);

      // the identity gate on both ranks: on the CPU each rank's program refuses the capture with its reason
      const gates = ofType('error').filter((e) => String(e.event.id).includes('identity'));
      assert.deepEqual(gates.map((e) => `${String(e.rank)}@${e.host}`).sort(), ['0@tp1', '1@tp2']);
      for (const g of gates) assert.equal(g.event.code, 'CAPTURE_FAILED', JSON.stringify(g.event));

      // eager and eager_aa, 2 reps each, on both ranks, both holding the all-reduced output
      const reps = ofType('rep');
      assert.equal(reps.length, 8, '4 measured reps x 2 ranks');
      for (const rid of new Set(reps.map((e) => e.event.id))) {
        const same = reps.filter((e) => e.event.id === rid);
        assert.deepEqual(same.map((e) => `${String(e.rank)}@${e.host}`).sort(), ['0@tp1', '1@tp2']);
        assert.equal(new Set(same.map((e) => JSON.stringify(e.event.hashes))).size, 1, `rep ${String(rid)}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
