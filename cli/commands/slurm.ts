/**
 * `orch slurm up|status|down`: orch workers inside a Slurm allocation (orchestrator/slurm/).
 * `up` submits one batch job of `--nodes` nodes, one `orch worker` per node taking the GPUs
 * Slurm gave it; the Redis URL (REDIS_URL) and the cluster secret reach the job as 0600 files,
 * never on a command line or in the job's environment. `status` shows the job and the cards its
 * workers registered; `down` drains the workers, then cancels the job.
 */
import { UserInputError } from '../../jobs/errors.ts';
import { defineCommand } from '../command.ts';
import { jsonLine } from '../terminal/json-line.ts';

export const slurmCommand = defineCommand({
  command: 'slurm <action>',
  describe: 'run orch workers inside a Slurm allocation: up (sbatch), status, down (drain, then scancel)',
  builder: (y) =>
    y
      .positional('action', {
        choices: ['up', 'status', 'down'] as const,
        demandOption: true,
        describe: 'up: submit the workers; status: the job and its registered cards; down: drain and cancel',
      })
      .option('nodes', { type: 'number', default: 1, describe: 'up: nodes of the allocation, one worker each' })
      .option('gpus-per-node', {
        type: 'number',
        default: 1,
        describe: 'up: GPUs (GRES gpu) per node: the cards each worker registers',
      })
      .option('time', {
        type: 'string',
        describe: "up: the allocation's time limit, in Slurm's format (60, 2:00:00, 1-00)",
      })
      .option('partition', { type: 'string', describe: 'up: the Slurm partition' })
      .option('account', { type: 'string', describe: 'up: the Slurm account' })
      .option('drain-before-end', {
        type: 'number',
        default: 60,
        describe: "up: seconds before the allocation's end at which the workers hold no lease and stop",
      })
      .option('worker-arg', {
        type: 'string',
        array: true,
        default: [] as string[],
        describe: 'up: one more argument for each orch worker (repeat: --worker-arg=--allow-command)',
      })
      .option('job', { type: 'string', describe: 'status, down: the job id (default: the latest orch slurm up)' })
      .option('run-dir', {
        type: 'string',
        describe: 'where job directories are kept, on a filesystem the nodes share (default ~/.cache/orch/slurm)',
      })
      .option('timeout', {
        type: 'number',
        default: 60,
        describe: 'down: seconds the workers may take to drain before scancel',
      }),
  handler: async (argv) => {
    const { orchLog } = await import('../embedded/log.ts');
    const { connectTarget, prefixFromEnv, redisUrlFromEnv } = await import('../embedded/redis-target.ts');
    const { defaultSlurmRoot, findJob } = await import('../../orchestrator/slurm/slurm-run-dir.ts');
    const root = argv.runDir ?? defaultSlurmRoot();
    const url = redisUrlFromEnv();
    if (!url) {
      throw new UserInputError(
        'NO_REDIS_URL',
        `orch slurm ${argv.action} needs the cluster's Redis: the workers in the allocation take their work from it`,
        {
          hint: 'export REDIS_URL (the URL orch serve uses; the nodes must reach it)',
        },
      );
    }
    const prefix = prefixFromEnv();
    if (argv.action === 'up') {
      if (argv.time === undefined)
        throw new UserInputError(
          'CLI_USAGE',
          "orch slurm up needs --time: the allocation's time limit bounds every lease of its workers",
          { hint: 'e.g. --time 2:00:00' },
        );
      for (const [flag, v, min] of [
        ['--nodes', argv.nodes, 1],
        ['--gpus-per-node', argv.gpusPerNode, 0],
        ['--drain-before-end', argv.drainBeforeEnd, 0],
      ] as const) {
        if (!Number.isInteger(v) || v < min)
          throw new UserInputError('CLI_USAGE', `${flag} ${v}: expected an integer of at least ${min}`);
      }
      const { requireClusterSecret } = await import('../../store/cluster-secret.ts');
      const { slurmUp } = await import('../../orchestrator/slurm/slurm-up.ts');
      const { fileURLToPath } = await import('node:url');
      const r = await slurmUp({
        root,
        redisUrl: url,
        secret: requireClusterSecret('orch slurm up'),
        prefix,
        nodes: argv.nodes,
        gpusPerNode: argv.gpusPerNode,
        time: argv.time,
        ...(argv.partition ? { partition: argv.partition } : {}),
        ...(argv.account ? { account: argv.account } : {}),
        node: process.execPath,
        orch: fileURLToPath(new URL('../../bin/orch.mjs', import.meta.url)),
        drainSeconds: argv.drainBeforeEnd,
        workerArgs: argv.workerArg,
      });
      process.stdout.write(
        argv.json
          ? jsonLine({ action: 'up', ...r })
          : `submitted job ${r.job} (${argv.nodes} node(s) × ${argv.gpusPerNode} GPU(s), ${argv.time}); files in ${r.dir}\nfollow it: orch slurm status --job ${r.job}\n`,
      );
      return;
    }
    const { dir, rec } = findJob(root, argv.job);
    const target = await connectTarget(url, rec.prefix, orchLog('slurm'));
    try {
      if (argv.action === 'status') {
        const { renderSlurmStatus, slurmStatus } = await import('../../orchestrator/slurm/slurm-status.ts');
        const s = await slurmStatus(target.redis, rec.prefix, rec.job);
        process.stdout.write(argv.json ? jsonLine(s) : renderSlurmStatus(s));
        return;
      }
      const { slurmDown } = await import('../../orchestrator/slurm/slurm-down.ts');
      const d = await slurmDown(target.redis, rec.prefix, rec.job, dir, argv.timeout * 1000);
      // the job drained or was cancelled: its files (a credential copy no worker read) go
      const { removeRunDir } = await import('../../orchestrator/slurm/slurm-run-dir.ts');
      removeRunDir(root, dir);
      process.stdout.write(
        argv.json
          ? jsonLine({ action: 'down', job: rec.job, ...d })
          : `job ${rec.job}: ${d.drained ? 'workers drained' : `workers not drained within ${argv.timeout} s`}; ${d.cancelled ? 'cancelled (scancel)' : 'already ended'}\n`,
      );
    } finally {
      await target.close();
    }
  },
});
