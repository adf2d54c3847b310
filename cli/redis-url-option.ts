/**
 * `--redis-url-file FILE`: the cluster's Redis URL read from a file only its owner can read, for
 * every command that talks to the cluster's Redis (a URL with a password in argv is readable by
 * every local user, in `ps` and /proc). Declared here once; a command's builder adds it with
 * withRedisUrlFile, and its handler hands argv to requireTarget or redisUrlFromArgs
 * (cli/embedded/redis-target.ts), which read the file before $REDIS_URL.
 */
import type { Argv } from 'yargs';

export function withRedisUrlFile<T>(y: Argv<T>) {
  return y.option('redis-url-file', {
    type: 'string',
    describe: "file (mode 0600, yours) whose first line is the cluster's Redis URL; read instead of $REDIS_URL",
  });
}
