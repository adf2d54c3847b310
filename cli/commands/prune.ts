/**
 * `orch prune --older-than AGE [--dry-run]`: removes from Redis every key of the experiments that
 * ended (done, failed, cancelled) more than AGE ago, as BullMQ's `clean(grace)` removes the jobs
 * older than its grace: at once, with `--dry-run` to list them first. A queued or running
 * experiment is never touched (store/lua/experiment-retire.lua checks its state in the call that
 * removes); the results directories on disk are never touched either.
 * `orch prune --rank-caches --older-than AGE`: instead, on this host, removes the compiler caches of
 * builds no longer in the build cache and of any build unused for longer than AGE
 * (worker/command/rank-caches-prune.ts); it needs no Redis.
 */
import { resolve } from 'node:path';
import { UserInputError } from '../../jobs/errors.ts';
import { defineCommand } from '../command.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';
import { jsonLine } from '../terminal/json-line.ts';

const UNITS_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `7d`, `12h`, `30m`, `0s` → milliseconds. */
export function parseAge(text: string): number {
  const m = /^(\d+(?:\.\d+)?)([smhd])$/.exec(text.trim());
  if (!m)
    throw new UserInputError('CLI_USAGE', `--older-than ${text}: not an age`, {
      hint: 'give a number and a unit: 30m, 12h, 7d (0s: every ended experiment)',
    });
  return Number(m[1]) * UNITS_MS[m[2] as keyof typeof UNITS_MS];
}

export const pruneCommand = defineCommand({
  command: 'prune',
  describe: "remove ended experiments' keys from Redis (their results directories stay)",
  builder: (y) =>
    withRedisUrlFile(y)
      .option('older-than', {
        type: 'string',
        demandOption: true,
        describe: 'ended more than this long ago: 30m, 12h, 7d (0s: every ended experiment)',
      })
      .option('dry-run', { type: 'boolean', default: false, describe: 'list what would be removed, remove nothing' })
      .option('rank-caches', {
        type: 'boolean',
        default: false,
        describe:
          "this host's compiler caches instead (Inductor, Triton, CUDA JIT): those of removed builds, and those unused for longer than --older-than",
      })
      .option('build-dir', {
        type: 'string',
        describe:
          "with --rank-caches: the worker's build directory (default: ORCH_BUILD_DIR, else ~/.cache/orch/builds; as root /var/cache/orch/builds)",
      }),
  handler: async (argv) => {
    const ageMs = parseAge(argv.olderThan);
    if (argv.rankCaches) {
      await pruneRankCaches({
        ageMs,
        olderThan: argv.olderThan,
        dryRun: argv.dryRun,
        json: argv.json,
        buildDir: argv.buildDir,
      });
      return;
    }
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { orchLog } = await import('../embedded/log.ts');
    const { requireTarget } = await import('../embedded/redis-target.ts');
    const { ExperimentRetention } = await import('../../store/experiment-retention.ts');
    const target = await requireTarget('prune', orchLog('prune'), argv);
    try {
      const retention = new ExperimentRetention(target.redis, target.prefix);
      const cutoff = Date.now() - ageMs;
      const found = await retention.candidates(cutoff);
      const removed: string[] = [];
      if (!argv.dryRun) for (const c of found) if (await retention.remove(c.id, cutoff)) removed.push(c.id);
      const listed = argv.dryRun ? found : found.filter((c) => removed.includes(c.id));
      if (argv.json) {
        process.stdout.write(jsonLine({ dry_run: argv.dryRun, older_than: argv.olderThan, experiments: listed }));
        return;
      }
      const verb = argv.dryRun ? 'would remove' : 'removed';
      const lines = listed.map(
        (c) => `${verb} ${c.id} (${c.state}${c.ended === null ? '' : `, ended ${new Date(c.ended).toISOString()}`})\n`,
      );
      process.stdout.write(
        `${lines.join('')}${verb} ${listed.length} experiment${listed.length === 1 ? '' : 's'} ended over ${argv.olderThan} ago${argv.dryRun ? ' (dry run: nothing removed)' : ''}; results directories are kept\n`,
      );
    } finally {
      await target.close();
    }
  },
});

async function pruneRankCaches(o: {
  ageMs: number;
  olderThan: string;
  dryRun: boolean;
  json: boolean | undefined;
  buildDir: string | undefined;
}): Promise<void> {
  const { defaultBuildRoot } = await import('../../worker/builds/build-cache.ts');
  const { prunableRankCaches, removeRankCaches } = await import('../../worker/command/rank-caches-prune.ts');
  const buildRoot = resolve(o.buildDir ?? defaultBuildRoot());
  const found = prunableRankCaches(buildRoot, Date.now() - o.ageMs);
  if (!o.dryRun) removeRankCaches(found);
  if (o.json) {
    process.stdout.write(jsonLine({ dry_run: o.dryRun, older_than: o.olderThan, rank_caches: found }));
    return;
  }
  const verb = o.dryRun ? 'would remove' : 'removed';
  const lines = found.map(
    (c) =>
      `${verb} ${c.dir} (${c.why === 'build removed' ? 'its build is no longer in the build cache' : `unused since ${c.last_used === null ? 'ever' : new Date(c.last_used).toISOString()}`})\n`,
  );
  process.stdout.write(
    `${lines.join('')}${verb} ${found.length} rank cache set${found.length === 1 ? '' : 's'} under ${buildRoot}'s parent${o.dryRun ? ' (dry run: nothing removed)' : ''}\n`,
  );
}
