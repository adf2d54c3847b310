/**
 * `orch worker --host NAME [--cards auto|LIST] [--graphrt PATH] [--cpu-cards N]`: the per-host
 * daemon (worker/worker.ts). Runs until SIGTERM or SIGINT, then stops gracefully: the rep in
 * flight finishes, the leases are released, the rest of the block is reported not run — or,
 * when that cannot finish (Redis gone), after STOP_LIMIT_MS with the ranks killed.
 *
 * Its Redis URL comes from --redis-url-file or REDIS_URL, never from argv when it has a password;
 * a Redis without a password is refused unless --insecure-redis. Once read, REDIS_URL and the
 * cluster secret leave its environment, the block /proc/<pid>/environ shows included
 * (worker/scrub-environ.ts), and then it makes itself non-dumpable (worker/non-dumpable.ts).
 *
 * Inside a Slurm job (`--slurm auto`: SLURM_JOB_ID set) its cards are the GPUs Slurm gave the step
 * (fake GRES on a node without a GPU: cpu cards of the GRES indexes), its host name the node and
 * the job (`<node>-slurm<job>`), and it stops `--drain-before-end` before the allocation ends
 * (jobs/slurm-allocation.ts, worker/slurm/).
 */
import { fileURLToPath } from 'node:url';
import { UserInputError } from '../../jobs/errors.ts';
import { messageOf } from '../../jobs/message-of.ts';
import type { WorkerSlurmOptions } from '../../worker/worker.ts';
import { defineCommand } from '../command.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';

const DEFAULT_GRAPHRT = fileURLToPath(new URL('../../native/build/graphrt', import.meta.url));

export const workerCommand = defineCommand({
  command: 'worker',
  describe: "run this host's worker: register its cards and run the blocks dispatched to it",
  builder: (y) =>
    withRedisUrlFile(y)
      .option('host', {
        type: 'string',
        defaultDescription: "this machine's short host name",
        describe: 'host name (the queue is host-<name>)',
      })
      .option('cards', {
        type: 'string',
        default: 'auto',
        describe: 'auto, or a comma list of GPU indexes/UUIDs or cpu:N',
      })
      .option('graphrt', { type: 'string', default: DEFAULT_GRAPHRT, describe: 'the graphrt binary run once per rank' })
      .option('cpu-cards', { type: 'number', default: 1, describe: 'with no GPU: how many cpu:N cards to offer' })
      .option('redis', {
        type: 'string',
        describe: 'Redis URL without a password (one with a password is refused: argv is public)',
      })
      .option('insecure-redis', {
        type: 'boolean',
        default: false,
        describe: 'accept a Redis that answers without a password (only on a network only you reach)',
      })
      .option('lock-dir', {
        type: 'string',
        describe:
          'private directory of the per-card flock files (default: $XDG_RUNTIME_DIR/orch/cards, else ~/.cache/orch/cards)',
      })
      .option('build-dir', {
        type: 'string',
        describe:
          'build cache of command workloads, on a big disk (default: $ORCH_BUILD_DIR, else ~/.cache/orch/builds; as root /var/cache/orch/builds)',
      })
      .option('prefix', {
        type: 'string',
        defaultDescription: '$ORCH_PREFIX, else orch',
        describe: 'Redis key prefix, the same for every orch process of a cluster (default: $ORCH_PREFIX, else orch)',
      })
      .option('heartbeat-ms', {
        type: 'number',
        default: 2000,
        describe: 'heartbeat and lease renew period; leases live twice this',
      })
      .option('secret-file', {
        type: 'string',
        describe:
          'file (mode 0600) holding the cluster secret block jobs are signed with (default: $ORCH_CLUSTER_SECRET_FILE, else $ORCH_CLUSTER_SECRET)',
      })
      .option('allow-command', {
        type: 'boolean',
        default: false,
        describe:
          "run command workloads (users' own binaries) on this host, and builds of commits; without it only graphrt runs",
      })
      .option('slurm', {
        choices: ['auto', 'on', 'off'] as const,
        default: 'auto' as const,
        describe: 'take the cards, host name and end of the Slurm job this runs in (auto: when SLURM_JOB_ID is set)',
      })
      .option('drain-before-end', {
        type: 'number',
        default: 60,
        describe:
          "under Slurm: seconds before the allocation's end at which no lease is held any more and the worker stops",
      })
      .option('stop-file', {
        type: 'string',
        describe: 'under Slurm: stop gracefully when this file appears (orch slurm down writes it)',
      })
      .option('unlink-credential-files', {
        type: 'boolean',
        default: false,
        describe:
          'remove the --redis-url-file and --secret-file once read (orch slurm up gives each worker its own copies)',
      })
      .option('run-as', {
        type: 'string',
        describe:
          "run command workloads' programs and builds as this unprivileged user (created with useradd when missing); needs root. They then cannot read the worker's secret files nor its environment; the build directory must be one the user can pass (a root worker's default, /var/cache/orch/builds, is). Default: orch-run for a root worker with --allow-command or --allow-build; `none` runs them as the worker's own user",
      })
      .option('allow-build', {
        type: 'boolean',
        default: false,
        describe:
          "build commits a spec's builds: name (their CMakeLists.txt or build recipe runs on this host); implied by --allow-command",
      }),
  handler: async (argv) => {
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { orchLog } = await import('../embedded/log.ts');
    const { prefixFromEnv, redisUrlFromArgs } = await import('../embedded/redis-target.ts');
    const { Worker } = await import('../../worker/worker.ts');
    const redisUrl = redisUrlFromArgs(argv, 'worker');
    if (!redisUrl) {
      throw new UserInputError('REDIS_URL_MISSING', 'orch worker needs a Redis to take its work from', {
        hint: 'pass --redis-url-file FILE (a 0600 file holding the URL) or set REDIS_URL (the URL `orch serve` uses)',
      });
    }
    if (!Number.isInteger(argv.cpuCards) || argv.cpuCards < 1)
      throw new UserInputError('CLI_USAGE', `--cpu-cards ${argv.cpuCards}: expected a positive integer`);
    if (!(argv.heartbeatMs >= 50))
      throw new UserInputError('CLI_USAGE', `--heartbeat-ms ${argv.heartbeatMs}: expected at least 50`);
    const { requireClusterSecret, SECRET_ENV, SECRET_FILE_ENV } = await import('../../store/cluster-secret.ts');
    const { orchVersion } = await import('../version.ts');
    const secret = requireClusterSecret('orch worker', argv.secretFile);
    // Read once, then gone from this process's environment, /proc/<pid>/environ included
    // (worker/scrub-environ.ts): a user's program must find no credential there.
    const { scrubEnviron } = await import('../../worker/scrub-environ.ts');
    const left = scrubEnviron(['REDIS_URL', SECRET_ENV, 'ORCH_SUBMIT_TOKEN', 'ORCH_DASHBOARD_TOKEN']);
    if (left.length > 0)
      process.stderr.write(
        `orch worker: ${left.join(', ')} still readable in /proc/${process.pid}/environ (this system refused to blank it); pass --redis-url-file and --secret-file instead of the environment\n`,
      );
    // read once: no credential stays in a plain file (orchestrator/slurm/batch-script.ts)
    if (argv.unlinkCredentialFiles) {
      const { rmSync } = await import('node:fs');
      for (const f of [argv.redisUrlFile, argv.secretFile]) if (f !== undefined) rmSync(f, { force: true });
    }
    const log = orchLog('worker', process.env.ORCH_LOG ?? 'info');
    // After the scrub (it writes /proc/self/mem, which a non-dumpable worker not run as root may
    // not open), before any user's program starts: its memory and environ unreadable to them.
    const { makeNonDumpable, NODUMP_FIX } = await import('../../worker/non-dumpable.ts');
    const dumpable = makeNonDumpable();
    if (dumpable === null) log.debug('non-dumpable: no process of this user may read its memory or environ');
    else
      log.warn(
        { reason: dumpable },
        `this worker stays dumpable: a program run as its own user can read its memory (the Redis password, the cluster secret) through /proc/${process.pid}/mem; ${NODUMP_FIX}`,
      );
    // a malformed ORCH_GANG_PORTS is refused now, not at a gang's first block
    const { gangPortRange } = await import('../../worker/free-port.ts');
    gangPortRange();
    const { chooseRunAs, resolveRunAs } = await import('../../worker/run-as.ts');
    const root = process.getuid?.() === 0;
    const runsUsersCode = argv.allowCommand || argv.allowBuild;
    const runAsUser = chooseRunAs(argv.runAs, { root, runsUsersCode });
    if (runAsUser.selfAsRoot !== null) log.warn(runAsUser.selfAsRoot);
    const { credentialFilesLeft } = await import('../../worker/credential-files.ts');
    const filesLeft = credentialFilesLeft({
      ownUserPrograms: runAsUser.user === null && !root && runsUsersCode,
      unlinked: argv.unlinkCredentialFiles,
      files: [
        { how: '--redis-url-file', path: argv.redisUrlFile },
        { how: '--secret-file', path: argv.secretFile },
        { how: SECRET_FILE_ENV, path: argv.secretFile === undefined ? process.env[SECRET_FILE_ENV] : undefined },
      ],
    });
    if (filesLeft !== null) log.warn(filesLeft);
    const runAs =
      runAsUser.user === null ? undefined : resolveRunAs(runAsUser.user, { create: true, log: (msg) => log.info(msg) });
    const slurm = await slurmOptions(argv);
    const { slurmHostName } = await import('../../jobs/slurm-allocation.ts');
    const worker = new Worker({
      ...(slurm ? { slurm } : {}),
      secret,
      allowCommand: argv.allowCommand,
      ...(runAs === undefined ? {} : { runAs }),
      allowBuild: argv.allowBuild,
      redisUrl,
      host: argv.host ?? (slurm ? slurmHostName(slurm.alloc.provenance) : undefined),
      cards:
        argv.cards === 'auto'
          ? 'auto'
          : argv.cards
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
      cpuCards: argv.cpuCards,
      graphrt: argv.graphrt,
      lockDir: argv.lockDir,
      buildDir: argv.buildDir,
      prefix: argv.prefix ?? prefixFromEnv(),
      heartbeatMs: argv.heartbeatMs,
      insecureRedis: argv.insecureRedis,
      orchVersion: orchVersion(),
      log,
    });
    const stopped = new Promise<void>((resolve) => {
      const onSignal = (sig: string) => {
        process.stderr.write(`orch worker: ${sig}, stopping after the reps in flight\n`);
        // under Slurm a SIGTERM is the job step's end, sent to every process of the step (the ranks ignore it)
        const job = slurm?.alloc.provenance.job;
        worker
          .stop(
            sig === 'SIGTERM' && job !== undefined
              ? `Slurm's SIGTERM to job ${job}: scancel, preemption or its time limit`
              : sig,
          )
          .then(resolve, resolve);
      };
      process.once('SIGTERM', () => onSignal('SIGTERM'));
      process.once('SIGINT', () => onSignal('SIGINT'));
      // it stops itself too: its Slurm allocation ends, or the stop file appeared
      void worker.done.then(resolve);
    });
    // SIGTERM while still waiting for Redis ends the wait too
    await Promise.race([worker.start(), stopped]);
    await stopped;
  },
});

/**
 * Where a spread gang's rank 0 of this worker listens: ORCH_ADVERTISE_ADDR when set (undefined
 * here: the executor reads it), else the node's Slurm NodeAddr, the allocation's network.
 */
async function nodeAddress(node: string): Promise<string | undefined> {
  if ((process.env.ORCH_ADVERTISE_ADDR ?? '').trim() !== '') return undefined;
  const { slurmNodeAddress } = await import('../../worker/slurm/node-address.ts');
  try {
    return (await slurmNodeAddress(node)) ?? undefined;
  } catch (err) {
    throw new UserInputError('SLURM_COMMAND', `scontrol show node -o ${node} failed: ${messageOf(err)}`, {
      hint: "the worker reads its node's NodeAddr for a spread gang's rendezvous; put slurm-client on PATH, or set ORCH_ADVERTISE_ADDR",
    });
  }
}

/** The Slurm job this worker runs in, when it runs in one and --slurm lets it (jobs/slurm-allocation.ts). */
async function slurmOptions(argv: {
  slurm: 'auto' | 'on' | 'off';
  drainBeforeEnd: number;
  stopFile?: string;
  cards: string;
}): Promise<WorkerSlurmOptions | null> {
  // Loaded here, not at the top: its schema needs zod, which `orch --help` does without.
  const { slurmAllocation, underSlurm } = await import('../../jobs/slurm-allocation.ts');
  if (argv.slurm === 'off' || (argv.slurm === 'auto' && !underSlurm(process.env))) return null;
  if (!(argv.drainBeforeEnd >= 0))
    throw new UserInputError('CLI_USAGE', `--drain-before-end ${argv.drainBeforeEnd}: expected seconds, 0 or more`);
  if (argv.cards !== 'auto')
    throw new UserInputError(
      'CLI_USAGE',
      `--cards ${argv.cards} under Slurm: the cards are the GPUs Slurm gave the step`,
      { hint: 'leave --cards at auto, or pass --slurm off to name cards yourself' },
    );
  const { squeueEnd } = await import('../../worker/slurm/squeue-end.ts');
  const job = process.env.SLURM_JOB_ID ?? '';
  const endEnv = process.env.SLURM_JOB_END_TIME;
  let end: number | null = null;
  if (endEnv === undefined && job !== '') {
    try {
      end = await squeueEnd(job);
    } catch (err) {
      throw new UserInputError('SLURM_COMMAND', `squeue -h -j ${job} -o %e failed: ${messageOf(err)}`, {
        hint: 'the worker needs squeue to learn when its allocation ends; put slurm-client on PATH',
      });
    }
  }
  const alloc = slurmAllocation(process.env, end);
  const advertise = await nodeAddress(alloc.provenance.node);
  return {
    alloc,
    ...(advertise ? { advertise } : {}),
    drainMs: argv.drainBeforeEnd * 1000,
    readEnd: () => squeueEnd(alloc.provenance.job),
    ...(argv.stopFile ? { stopFile: argv.stopFile } : {}),
  };
}
