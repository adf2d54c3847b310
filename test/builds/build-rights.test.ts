/**
 * Building a commit runs its code: a native spec's `builds:` runs that commit's CMakeLists.txt
 * on the worker, and git would run the repository's hooks. A planted repository whose commit's
 * native/CMakeLists.txt touches one marker and whose .git/hooks/post-checkout touches another:
 *
 * - a signed build job (what the scheduler would send) on a worker without --allow-build:
 *   refused with BUILD_NOT_ALLOWED, neither marker made;
 * - on a worker with --allow-build: CMake runs (the marker it makes is the build permitted), the
 *   hook does not (git runs hardened: jobs/hardened-git.ts);
 * - `orch submit` of that spec, or of a command spec, to a cluster whose only worker allows
 *   neither: refused at submit, exit 2, nothing registered;
 * - a command spec on a cluster where one worker allows commands and another does not: every
 *   block is granted on the one that allows them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Job, Queue } from 'bullmq';
import { BuildJobSchema } from '../../jobs/build-job.ts';
import { signJob } from '../../jobs/grant.ts';
import { HARDENED_GIT_ARGS, hardenedGitEnv } from '../../jobs/hardened-git.ts';
import { WorkloadSchema } from '../../jobs/spec.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { hostBuildQueue, orchKeys } from '../../store/keys.ts';
import { startScheduler, submitYaml, waitEnded } from '../orchestrator/in-process-scheduler.ts';
import { TEST_CLUSTER_SECRET } from '../utils/cluster-secret.ts';
import { runOrch } from '../utils/orch-run.ts';
import { freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

interface EvilRepo {
  dir: string;
  commit: string;
  cmakeMarker: string;
  hookMarker: string;
}

function evilRepo(root: string, tag: string): EvilRepo {
  const dir = join(root, `repo-${tag}`);
  mkdirSync(join(dir, 'native'), { recursive: true });
  const cmakeMarker = join(root, `cmake-ran-${tag}`);
  const hookMarker = join(root, `hook-ran-${tag}`);
  const git = (...args: string[]): string => {
    const r = spawnSync('git', ['-c', 'user.email=t@orch', '-c', 'user.name=orch-test', ...args], {
      cwd: dir,
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };
  git('init', '-q', '-b', 'main');
  writeFileSync(
    join(dir, 'native/CMakeLists.txt'),
    `cmake_minimum_required(VERSION 3.10)\nproject(planted NONE)\nfile(TOUCH "${cmakeMarker}")\n`,
  );
  git('add', 'native/CMakeLists.txt');
  git('commit', '-qm', 'a CMakeLists.txt that leaves a marker');
  const hook = join(dir, '.git/hooks/post-checkout');
  writeFileSync(hook, `#!/bin/sh\ntouch "${hookMarker}"\n`);
  chmodSync(hook, 0o755);
  return { dir, commit: git('rev-parse', 'HEAD'), cmakeMarker, hookMarker };
}

/** An A/B command spec whose run does `cmd`, then prints its one timed step. */
function commandSpec(name: string, cmd: string, blocks: number): string {
  return `name: ${name}
design: ab
workload:
  runtime: command
  run: { cmd: "${cmd}; echo 'step 0: 1'; echo 'step 1: 1'", timeout_s: 30 }
  toggles: { FAST: { env: FAST, on: "1", off: "0" } }
  metric_source: { format: regex, pattern: 'step (?<step>\\d+): (?<value>[0-9.]+)', value_group: value, step_group: step }
  warmup: 1
  steps: 1
toggles: [FAST]
arms:
  - { name: a, toggles: { FAST: false } }
  - { name: b, toggles: { FAST: true } }
reps: 2
blocks: { count: ${blocks}, ranks: 1 }
gates: { identity: false, aa: false }
metric: { name: ms, better: lower }
`;
}

const NATIVE = WorkloadSchema.parse({
  runtime: 'native',
  backend: 'cpu',
  kind: 'chain',
  params: { kernels: 4 },
  warmup: 1,
  steps: 2,
});

describe("building a commit needs the worker's permission and runs no git hook", () => {
  const env = useWorkerEnv('build-rights');

  /** A signed build job of the repo's commit on the host's build queue; resolves with how it ended. */
  async function buildOn(
    prefix: string,
    host: string,
    repo: EvilRepo,
    experiment: string,
  ): Promise<{ state: string; reason: string }> {
    await env.redis.hsetnx(orchKeys(prefix).exp(experiment), 'state', 'running');
    const job = BuildJobSchema.parse({
      experiment,
      host,
      attempt: 1,
      epoch: 1,
      workload: NATIVE,
      builds: { repo: repo.dir, builds: { evil: { commit: repo.commit, ref: 'main' } } },
      own: false,
    });
    const q = new Queue(hostBuildQueue(host), { connection: env.redis, prefix });
    try {
      const signed = signJob(hostBuildQueue(host), 'build', `${experiment}-b1`, job, TEST_CLUSTER_SECRET);
      await q.add(signed.name, signed.data, signed.opts);
      let end: { state: string; reason: string } | null = null;
      await waitFor(
        `build job of ${experiment} ends`,
        async () => {
          const state = await q.getJobState(`${experiment}-b1`);
          if (state !== 'completed' && state !== 'failed') return false;
          end = { state, reason: (await Job.fromId(q, `${experiment}-b1`))?.failedReason ?? '' };
          return true;
        },
        { timeoutMs: 120_000 },
      );
      return end!;
    } finally {
      await q.close();
    }
  }

  test('a worker without --allow-build refuses the build job: no CMake, no hook', async () => {
    const prefix = freshPrefix();
    const repo = evilRepo(env.dir, 'refused');
    await env.spawn({ host: 'nb1', prefix, allowCommand: false, args: ['--build-dir', join(env.dir, 'builds-nb1')] });
    const end = await buildOn(prefix, 'nb1', repo, 'refused');
    assert.equal(end.state, 'failed');
    assert.match(
      end.reason,
      /BUILD_NOT_ALLOWED: .*builds of commits \(evil\) reached the worker of host nb1, which was started without --allow-build/,
    );
    assert.ok(!existsSync(repo.cmakeMarker), "the commit's CMakeLists.txt ran on a worker that builds nothing");
    assert.ok(!existsSync(repo.hookMarker), "the repository's post-checkout hook ran");
  });

  test("a worker with --allow-build runs the commit's CMake, never the repository's hook", async () => {
    const prefix = freshPrefix();
    const repo = evilRepo(env.dir, 'allowed');
    await env.spawn({
      host: 'ab1',
      prefix,
      allowCommand: false,
      args: ['--allow-build', '--build-dir', join(env.dir, 'builds-ab1')],
      env: { GRAPHRT_CUDA: 'OFF' },
    });
    const end = await buildOn(prefix, 'ab1', repo, 'allowed');
    // the planted CMakeLists.txt has no graphrt target: the build fails after configuring
    assert.equal(end.state, 'failed', end.reason);
    assert.doesNotMatch(end.reason, /NOT_ALLOWED/);
    assert.ok(existsSync(repo.cmakeMarker), `the permitted build did not configure: ${end.reason}`);
    assert.ok(
      !existsSync(repo.hookMarker),
      "git ran the repository's post-checkout hook during the build's worktree add",
    );
  });

  test('orch submit refuses, exit 2, a spec whose builds or command no registered worker allows', async () => {
    const prefix = freshPrefix();
    const repo = evilRepo(env.dir, 'submit');
    await env.spawn({ host: 'ns1', prefix, allowCommand: false });
    const native = join(repo.dir, 'builds.yaml');
    writeFileSync(
      native,
      `name: evil-builds
design: ab
builds:
  evil: { ref: main }
workload: { runtime: native, backend: cpu, kind: chain, params: { kernels: 4 }, warmup: 1, steps: 2 }
toggles: [graph]
arms:
  - { name: evil, build: evil, toggles: { graph: true } }
  - { name: own, toggles: { graph: true } }
reps: 2
blocks: { count: 1 }
gates: { identity: false, aa: false }
metric: { name: ms_per_step, better: lower }
`,
    );
    const command = join(env.dir, 'command.yaml');
    writeFileSync(command, commandSpec('evil-command', `touch ${join(env.dir, 'command-ran')}`, 1));
    const cluster = { REDIS_URL: env.server.url, ORCH_PREFIX: prefix };
    for (const [file, what, flag] of [
      [native, 'a build of a commit', '--allow-build'],
      [command, 'a command workload', '--allow-command'],
    ] as const) {
      const r = await runOrch(['submit', file, '--no-wait'], cluster);
      assert.equal(r.code, 2, `${file}: ${r.output}`);
      assert.match(
        r.output,
        new RegExp(
          `the spec runs ${what} \\(${flag}\\), and no registered worker allows it \\(hosts: ns1\\); nothing was registered`,
        ),
      );
      assert.ok(r.output.includes(`start a worker with ${flag}`), r.output);
    }
    assert.deepEqual(
      await env.redis.zrange(orchKeys(prefix).sched.active, '0', '-1'),
      [],
      'a refused spec was registered',
    );
    assert.ok(!existsSync(repo.cmakeMarker) && !existsSync(join(env.dir, 'command-ran')));
  });

  test("the scheduler grants a command workload's blocks only to the host whose worker allows commands", async () => {
    const prefix = freshPrefix();
    const marker = join(env.dir, 'ran-on');
    // the host without --allow-command registers first and has more cards: it would be granted first
    await env.spawn({ host: 'deny', prefix, cards: 'cpu:0,cpu:1', allowCommand: false });
    await env.spawn({ host: 'allow', prefix, cards: 'cpu:0', allowCommand: true });
    const sched = await startScheduler({ url: env.server.url, prefix, safetyPollMs: 200 });
    try {
      const id = await submitYaml(
        env.redis,
        prefix,
        env.dir,
        'granted-where-allowed',
        commandSpec('granted-where-allowed', `echo $ORCH_ARM >> ${marker}`, 3),
      );
      const state = await waitEnded(env.redis, prefix, id, 60_000);
      const blocks = await new ExperimentStore(env.redis, prefix).blocks(id);
      assert.equal(state, 'done', JSON.stringify(blocks.map((b) => b.reason)));
      const hosts = new Set(blocks.flatMap((b) => b.attempts.flatMap((a) => a.gang.map((g) => g.host))));
      assert.deepEqual(
        [...hosts],
        ['allow'],
        'a block of the command workload was granted to a worker without --allow-command',
      );
    } finally {
      await sched.stop();
    }
  });

  test('hardened git reads no home gitconfig', () => {
    const home = join(env.dir, 'home');
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, '.gitconfig'), '[safe]\n\tdirectory = *\n[orch]\n\tprobe = from-home\n');
    const plain = spawnSync('git', ['config', '--get', 'orch.probe'], {
      encoding: 'utf8',
      env: { ...process.env, HOME: home },
    });
    assert.equal(plain.stdout.trim(), 'from-home', "the probe: plain git reads this home's gitconfig");
    const hardened = spawnSync('git', [...HARDENED_GIT_ARGS, 'config', '--get', 'orch.probe'], {
      encoding: 'utf8',
      env: hardenedGitEnv({ ...process.env, HOME: home, GIT_CONFIG_PARAMETERS: "'orch.probe=injected'" }),
    });
    assert.equal(
      hardened.stdout.trim(),
      '',
      `hardened git read configuration from the home gitconfig or the environment: ${hardened.stdout}`,
    );
  });
});
